//! A panel of two scripted judges (one giving unusable answers on some items) and the judge
//! validity check with a scripted judge that prefers longer answers, against the in-suite test
//! server.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use h2htalk_judge::validity::{Degradation, degraded, scenarios_for};
use h2htalk_judge::{JudgeHandle, JudgeSettings, judge_run, validity_run};
use h2htalk_report::compute::panel::{PanelReport, summarize};
use h2htalk_report::compute::validity::ValidityReport;
use h2htalk_store::{SessionKind, Store, ValidityOutcome};

/// The panel of every judge that judged `run`, as the report computes it from the stored rows.
fn panel_of(store: &Store, run: &str) -> PanelReport {
    let judged: Vec<(String, Vec<h2htalk_store::JudgeScore>)> = store
        .judges(run, SessionKind::Rubric)
        .unwrap()
        .into_iter()
        .map(|j| {
            let rows = store.judge_scores(run, &j).unwrap();
            (j, rows)
        })
        .collect();
    summarize(run, &judged)
}

/// A dialogue rubric answer with these scores (empathy, fit_to_state, persona_consistency, naturalness).
fn dialogue(s: [u8; 4]) -> String {
    format!(
        "{{\"scores\": {{\"empathy\": {}, \"fit_to_state\": {}, \"persona_consistency\": {}, \"naturalness\": {}}}, \"reason\": \"ok\"}}",
        s[0], s[1], s[2], s[3]
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn two_judges_their_mean_and_alpha_without_unusable_answers() {
    let suite = common::suite();
    let prompts = common::prompts();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("h.db")).unwrap();
    common::make_run(
        &mut store,
        "r1",
        &suite,
        &prompts,
        &[
            ("dialogue_base-001", Some("（笑）PANEL-1")),
            ("dialogue_base-002", Some("（笑）PANEL-2")),
            ("dialogue_base-003", Some("（笑）PANEL-3")),
            ("dialogue_base-004", Some("（笑）PANEL-4")),
            ("dialogue_emotion-001", None),
        ],
    );
    let a = common::server(&[
        ("PANEL-1", &dialogue([8, 7, 9, 6])),
        ("PANEL-2", &dialogue([4, 5, 6, 3])),
        ("PANEL-3", &dialogue([9, 8, 9, 8])),
        ("PANEL-4", &dialogue([2, 3, 2, 3])),
    ])
    .await;
    let b = common::server(&[
        ("PANEL-1", &dialogue([7, 7, 9, 5])),
        ("PANEL-2", &dialogue([5, 4, 6, 4])),
        ("PANEL-3", &dialogue([9, 9, 8, 8])),
        // Item 4: prose, and prose again on every retry: no vote.
        ("PANEL-4", "It reads as a kind reply."),
        ("not the JSON object", "Still a kind reply."),
    ])
    .await;
    let (ma, mb) = (common::client("judge-a", &a.base_url()), common::client("judge-b", &b.base_url()));
    let scheduler = common::scheduler();
    let settings = JudgeSettings::pinned(5);
    for m in [&ma, &mb] {
        judge_run(
            &mut store,
            "r1",
            JudgeHandle { model: m, scheduler: &scheduler, settings: &settings, texts: common::texts(), prices: None },
        )
        .await
        .unwrap();
    }
    let panel = panel_of(&store, "r1");
    assert_eq!(panel.judges, ["openai:judge-a", "openai:judge-b"]);
    assert_eq!(panel.per_judge["openai:judge-b"].overall.judge_parse_failed, 1);
    let d = &panel.families["dialogue"];
    // The failed generation is no item of the panel; item 4 has one vote.
    assert_eq!((d.items, d.rated), (4, 4));
    let votes_b = &d.per_judge["openai:judge-b"];
    assert_eq!((votes_b.scored, votes_b.judge_parse_failed, votes_b.judge_failed), (3, 1, 0));
    let empathy = &d.criteria["empathy"];
    // Items 1-3 are pairable: (8,7), (4,5), (9,9); item 4's lone 2 is not.
    // Observed: 2*(1 + 1 + 0) / 6 = 2/3. Expected: (2*6*316 - 2*42^2) / (6*5) = 264/30.
    // alpha = 1 - (2/3) / (264/30) = 61/66.
    assert_eq!((empathy.agreement.pairable_items, empathy.agreement.pairable_votes), (3, 6));
    assert!((empathy.agreement.alpha.unwrap() - 61.0 / 66.0).abs() < 1e-12, "{:?}", empathy.agreement);
    // The panel mean: per item the mean of its votes (7.5, 4.5, 9, 2), then their mean.
    assert_eq!(empathy.mean, Some(5.75));
    assert_eq!(empathy.per_judge["openai:judge-a"], Some(5.75));
    assert_eq!(empathy.per_judge["openai:judge-b"], Some(7.0));
    // persona_consistency: (9,9), (6,6), (9,8): observed 2*(0+0+1)/6, expected over 9,9,6,6,9,8.
    let pc = &d.criteria["persona_consistency"].agreement;
    let v = [9.0, 9.0, 6.0, 6.0, 9.0, 8.0_f64];
    let (sum, sq): (f64, f64) = (v.iter().sum(), v.iter().map(|x| x * x).sum());
    let expected = (2.0 * 6.0 * sq - 2.0 * sum * sum) / 30.0;
    assert!((pc.alpha.unwrap() - (1.0 - (2.0 / 6.0) / expected)).abs() < 1e-12);
    // Judge B's unusable answer was asked three times (the allowed tries), not scored.
    assert_eq!(b.counters.requests.load(Ordering::Relaxed), 3 + 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn one_judge_has_no_agreement() {
    let suite = common::suite();
    let prompts = common::prompts();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("h.db")).unwrap();
    common::make_run(
        &mut store,
        "r1",
        &suite,
        &prompts,
        &[("dialogue_base-001", Some("（笑）PANEL-1")), ("dialogue_base-002", Some("（笑）PANEL-2"))],
    );
    let a = common::server(&[("PANEL-1", &dialogue([8, 7, 9, 6])), ("PANEL-2", &dialogue([4, 5, 6, 3]))]).await;
    let m = common::client("judge-a", &a.base_url());
    let scheduler = common::scheduler();
    let settings = JudgeSettings::pinned(5);
    judge_run(
        &mut store,
        "r1",
        JudgeHandle { model: &m, scheduler: &scheduler, settings: &settings, texts: common::texts(), prices: None },
    )
    .await
    .unwrap();
    let panel = panel_of(&store, "r1");
    let d = &panel.families["dialogue"];
    assert_eq!(d.criteria["empathy"].agreement.alpha, None);
    assert_eq!(d.criteria["empathy"].agreement.pairable_items, 0);
    assert_eq!(d.criteria["empathy"].mean, Some(6.0));
}

/// The score the scripted judge gives an answer: longer is better (floor of log2 of its length in
/// characters, 1-10), on every criterion.
fn length_score(text: &str) -> u8 {
    let n = text.chars().count().max(1) as f64;
    (n.log2().floor() as i64).clamp(1, 10) as u8
}

fn rubric(criteria: &[&str], score: u8) -> String {
    let scores: Vec<String> = criteria.iter().map(|c| format!("\"{c}\": {score}")).collect();
    format!("{{\"scores\": {{{}}}, \"reason\": \"length\"}}", scores.join(", "))
}

#[tokio::test(flavor = "multi_thread")]
async fn validity_with_a_judge_that_prefers_longer_answers() {
    let suite = common::suite();
    let prompts = common::prompts();
    let texts = common::texts();
    let limit = Some(3);
    let scenarios = scenarios_for(&suite, limit);
    assert_eq!(scenarios.len(), 9, "three per family");
    // What the check will show the judge, and what this judge answers: a script keyed by the
    // answer as the rubric prompt frames it. One degraded copy gets prose only (unparsable).
    let unparsable = (scenarios[0].id.clone(), Degradation::PersonaBreak);
    let mut script: Vec<(String, String)> = Vec::new();
    let mut expected: BTreeMap<(String, &str), (usize, usize, usize)> = BTreeMap::new();
    for s in &scenarios {
        let family = s.task.family();
        let lang = texts.lang(s.lang);
        let criteria: Vec<&str> = lang.criteria(family).iter().map(|c| c.id.as_str()).collect();
        // The answer and the rubric's first line after it: one key per family, as the same text
        // (the fixed comfort line) is shown in every family.
        let key =
            |text: &str| format!("<<<\n{text}\n>>>\n\n{}\n- {}", lang.rubric.rubric, lang.criteria(family)[0].text);
        let reference = length_score(&s.reference);
        script.push((key(&s.reference), rubric(&criteria, reference)));
        for d in Degradation::ALL.iter().copied().filter(|d| d.applies_to(family)) {
            let Some(text) = degraded(&suite, s, d) else { continue };
            let cell = expected.entry((family.name().to_string(), d.as_str())).or_default();
            if (s.id.clone(), d) == unparsable {
                script.insert(0, (key(&text), "A fine answer.".into()));
                cell.2 += 1;
                continue;
            }
            script.push((key(&text), rubric(&criteria, length_score(&text))));
            cell.0 += 1;
            cell.1 += usize::from(reference > length_score(&text));
        }
    }
    script.push(("not the JSON object".into(), "Still a fine answer.".into()));
    let pairs: Vec<(&str, &str)> = script.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = common::server(&pairs).await;
    let model = common::client("judge", &server.base_url());
    let scheduler = common::scheduler();
    let settings = JudgeSettings::pinned(9);
    let judge = JudgeHandle { model: &model, scheduler: &scheduler, settings: &settings, texts, prices: None };

    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("h.db")).unwrap();
    common::make_run(&mut store, "r1", &suite, &prompts, &[("dialogue_base-001", Some("（笑）好。"))]);
    let run = validity_run(&mut store, "r1", &suite, &prompts, judge, limit).await.unwrap();
    let report = ValidityReport::from_rows(&run.judge, run.rows.clone());

    // Every family and degradation counted exactly as this judge's preference predicts.
    for ((family, d), (n, correct, parse_failed)) in &expected {
        let cell = &report.families[family][*d];
        assert_eq!(
            (cell.n, cell.ranked_correctly, cell.judge_parse_failed, cell.judge_failed),
            (*n, *correct, *parse_failed, 0),
            "{family} {d}"
        );
        if cell.n >= 2 {
            assert_eq!(cell.interval, h2htalk_stats::wilson(*correct, *n));
        } else {
            assert_eq!(cell.interval, None);
        }
    }
    // A longer-is-better judge gets truncation right every time, and persona breaks and invented
    // memories (longer than the reference) wrong every time.
    for (family, cells) in report.families.iter().filter(|(f, _)| *f != h2htalk_store::SAFETY_GROUP) {
        let t = &cells["truncation"];
        assert_eq!((t.ranked_correctly, t.n), (3, 3), "{family}");
        assert_eq!(cells["persona_break"].ranked_correctly, 0, "{family}");
        if let Some(m) = cells.get("fabricated_memory") {
            assert_eq!(m.ranked_correctly, 0, "{family}");
        }
    }
    assert!(!report.families["itinerary"].contains_key("fabricated_memory"));
    assert_eq!(report.families["dialogue"]["persona_break"].judge_parse_failed, 1);
    // One request per answer shown, plus two retries for the unparsable one; the safety judge's
    // questions about the canned answers get prose here: three tries each, all unparsable.
    let answers: usize = 9 + expected.values().map(|(n, _, p)| n + p).sum::<usize>();
    let safety = &report.families[h2htalk_store::SAFETY_GROUP];
    let asked: usize = safety.values().map(|c| c.judge_parse_failed).sum();
    assert!(asked > 0 && safety.values().all(|c| c.n == 0 && c.judge_failed == 0), "{safety:?}");
    assert_eq!(server.counters.requests.load(Ordering::Relaxed), (answers + 3 * asked) as u64 + 2);
    // Stored with the run, and read back the same.
    assert_eq!(store.validity_judges("r1").unwrap(), [run.judge.clone()]);
    let stored = store.validity("r1", &run.judge).unwrap();
    assert_eq!(ValidityReport::from_rows(&run.judge, stored.clone()).families, report.families);
    let unparsable = |r: &&h2htalk_store::ValidityRow| r.outcome == ValidityOutcome::JudgeParseFailed;
    assert_eq!(stored.iter().filter(|r| r.task != h2htalk_store::SAFETY_GROUP).filter(unparsable).count(), 1);
    assert_eq!(stored.iter().filter(|r| r.task == h2htalk_store::SAFETY_GROUP).filter(unparsable).count(), asked);
}

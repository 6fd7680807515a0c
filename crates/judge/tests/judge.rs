//! The rubric judge and pairwise mode against scripted answers of the in-suite test server.

mod common;

use h2htalk_judge::{JudgeHandle, JudgeSettings, judge_run, pairwise_run};
use h2htalk_report::compute::rubric::{JudgeGroup, summarize};
use h2htalk_store::{SessionKind, Store};

/// The stored rubric judgments of `run` by `judge`, per sub-task and overall, as the report counts them.
fn counted(store: &Store, run: &str, judge: &str) -> (std::collections::BTreeMap<String, JudgeGroup>, JudgeGroup) {
    summarize(&store.judge_scores(run, judge).unwrap())
}

const GOOD_D: &str = "```json\n{\"scores\": {\"empathy\": 8, \"fit_to_state\": 7, \"persona_consistency\": 9, \"naturalness\": 6}, \"reason\": \"warm and in character\"}\n```";
const PARTIAL_I: &str = "{\"scores\": {\"feasibility\": 5, \"consistency\": 6}, \"reason\": \"missing one\"}";
const GOOD_I: &str =
    "{\"scores\": {\"feasibility\": 5, \"consistency\": 6, \"constraint_following\": 7}, \"reason\": \"fine plan\"}";

#[tokio::test(flavor = "multi_thread")]
async fn rubric_scores_parse_retries_and_counted_failures() {
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
            ("dialogue_base-001", Some("（笑）GOOD-D1-MARK")),
            ("recollection_refine-001", Some("BAD-R1-MARK")),
            ("itinerary_middle-001", Some("FIX-I1-MARK")),
            ("dialogue_emotion-001", None),
            ("dialogue_schedule-001", Some("   ")),
        ],
    );
    let server = common::server(&[
        ("GOOD-D1-MARK", GOOD_D),
        ("BAD-R1-MARK", "I think this answer is lovely."),
        // The retry names what was wrong; prose again on the first kind, the fix on the second.
        ("not the JSON object", "Still prose, sorry."),
        ("FIX-I1-MARK", PARTIAL_I),
        ("scores.constraint_following` is missing", GOOD_I),
    ])
    .await;
    let model = common::client("judge", &server.base_url());
    let scheduler = common::scheduler();
    let settings = JudgeSettings::pinned(42);
    let judge =
        JudgeHandle { model: &model, scheduler: &scheduler, settings: &settings, texts: common::texts(), prices: None };
    let report = judge_run(&mut store, "r1", judge).await.unwrap();
    let (per_task, o) = counted(&store, "r1", &report.judge);
    assert_eq!((o.items, o.scored, o.judge_parse_failed, o.judge_failed), (5, 2, 1, 0));
    assert_eq!((o.generation_failed, o.empty_answer), (1, 1));
    assert_eq!(per_task["dialogue_base"].mean, Some(7.5));
    assert_eq!(per_task["dialogue_base"].criteria["persona_consistency"], 9.0);
    assert_eq!(per_task["itinerary_middle"].mean, Some(6.0));
    assert_eq!(per_task["recollection_refine"].mean, None);
    assert_eq!(report.judged_now, 3);
    assert_eq!(report.judge, "openai:judge");
    // Every answer's tokens are in the store: 1 + 3 + 2 answers, as the server reported them.
    let usage = store.usage("r1").unwrap();
    assert_eq!(usage.len(), 1);
    let u = &usage[0];
    assert_eq!((u.role.as_str(), u.model.as_str(), u.purpose.to_text().as_str()), ("judge", "openai:judge", "rubric"));
    assert_eq!((u.usage.calls, u.usage.unknown_usage, u.prices), (6, 0, None));
    assert_eq!((u.usage.input_tokens, u.usage.output_tokens), (report.input_tokens, report.output_tokens));
    assert!(u.usage.input_tokens > 0);

    let rows = store.judge_scores("r1", &report.judge).unwrap();
    let row = |id: &str| rows.iter().find(|r| r.scenario_id == id).unwrap();
    let refine = row("recollection_refine-001");
    let (outcome, attempts, score) = (refine.outcome, refine.attempts, refine.scores.clone());
    assert_eq!((outcome.as_str(), attempts, score), ("judge_parse_failed", 3, None));
    let attempts = row("itinerary_middle-001").attempts;
    assert_eq!(attempts, 2);
    let recorded = store.judge_session("r1", SessionKind::Rubric, &report.judge).unwrap().unwrap().settings;
    assert_eq!(recorded["generation"]["seed"], 42);
    assert_eq!(recorded["generation"]["temperature"], 0.0);

    // Judging again asks nothing new: every item already has a result.
    let before = server.counters.requests.load(std::sync::atomic::Ordering::Relaxed);
    let again = judge_run(&mut store, "r1", judge).await.unwrap();
    assert_eq!(again.judged_now, 0);
    assert_eq!(counted(&store, "r1", &again.judge).1.scored, 2);
    assert_eq!(server.counters.requests.load(std::sync::atomic::Ordering::Relaxed), before);
}

/// A run longer than the judge's page (512 items read from the store at a time) is judged whole:
/// one judgment per item, and a second pass over the same run asks nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_longer_than_a_page_is_judged_item_by_item_once() {
    let suite = common::suite();
    let prompts = common::prompts();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("h.db")).unwrap();
    let ids: Vec<String> = suite.scenarios.iter().map(|s| s.id.clone()).collect();
    assert!(ids.len() > 512, "{} scenarios", ids.len());
    let answers: Vec<(&str, Option<&str>)> = ids.iter().map(|id| (id.as_str(), Some("（点头）好。"))).collect();
    common::make_run(&mut store, "r1", &suite, &prompts, &answers);
    // Each family's rubric, found by its criteria in the judge's prompt.
    const GOOD_R: &str =
        "{\"scores\": {\"faithfulness\": 7, \"completeness\": 6, \"no_invention\": 8}, \"reason\": \"ok\"}";
    let server = common::server(&[
        ("\"persona_consistency\": <1-10>", GOOD_D),
        ("\"no_invention\": <1-10>", GOOD_R),
        ("\"constraint_following\": <1-10>", GOOD_I),
    ])
    .await;
    let model = common::client("judge", &server.base_url());
    let scheduler = common::scheduler();
    let settings = JudgeSettings::pinned(1);
    let judge =
        JudgeHandle { model: &model, scheduler: &scheduler, settings: &settings, texts: common::texts(), prices: None };
    let report = judge_run(&mut store, "r1", judge).await.unwrap();
    assert_eq!(report.judged_now, ids.len());
    let (_, o) = counted(&store, "r1", &report.judge);
    assert_eq!((o.items, o.scored), (ids.len(), ids.len()));
    let again = judge_run(&mut store, "r1", judge).await.unwrap();
    assert_eq!(again.judged_now, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn infrastructure_failures_are_counted_apart_and_asked_again() {
    let suite = common::suite();
    let prompts = common::prompts();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("h.db")).unwrap();
    common::make_run(&mut store, "r1", &suite, &prompts, &[("dialogue_base-001", Some("（笑）GOOD-D1-MARK"))]);
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dead = common::client("judge", &format!("http://127.0.0.1:{port}/v1"));
    let scheduler = common::scheduler();
    let settings = JudgeSettings::pinned(1);
    let report = judge_run(
        &mut store,
        "r1",
        JudgeHandle { model: &dead, scheduler: &scheduler, settings: &settings, texts: common::texts(), prices: None },
    )
    .await
    .unwrap();
    assert_eq!(
        (
            counted(&store, "r1", &report.judge).1.judge_failed,
            counted(&store, "r1", &report.judge).1.scored,
            counted(&store, "r1", &report.judge).1.judge_parse_failed
        ),
        (1, 0, 0)
    );
    let server = common::server(&[("GOOD-D1-MARK", GOOD_D)]).await;
    let live = common::client("judge", &server.base_url());
    let report = judge_run(
        &mut store,
        "r1",
        JudgeHandle { model: &live, scheduler: &scheduler, settings: &settings, texts: common::texts(), prices: None },
    )
    .await
    .unwrap();
    assert_eq!(
        (
            report.judged_now,
            counted(&store, "r1", &report.judge).1.judge_failed,
            counted(&store, "r1", &report.judge).1.scored
        ),
        (1, 0, 1)
    );
    // Other settings: earlier judgments are dropped, not mixed.
    let other = JudgeSettings::pinned(2);
    let report = judge_run(
        &mut store,
        "r1",
        JudgeHandle { model: &live, scheduler: &scheduler, settings: &other, texts: common::texts(), prices: None },
    )
    .await
    .unwrap();
    assert!(report.restarted);
    assert_eq!(report.judged_now, 1);
    // A judge without a seed is refused.
    let mut unpinned = JudgeSettings::pinned(0);
    unpinned.generation.seed = None;
    let err = judge_run(
        &mut store,
        "r1",
        JudgeHandle { model: &live, scheduler: &scheduler, settings: &unpinned, texts: common::texts(), prices: None },
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("seed"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn pairwise_judges_both_orders_and_ranks_runs() {
    let suite = common::suite();
    let prompts = common::prompts();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("h.db")).unwrap();
    let ids = ["dialogue_base-001", "dialogue_base-002", "dialogue_base-003", "dialogue_base-004"];
    let x = ["（笑）P1-X", "（笑）P2-X", "（笑）P3-X", "（笑）P4-X"];
    let y = ["（笑）P1-Y", "（笑）P2-Y", "（笑）P3-Y", "（笑）P4-Y"];
    let run = |answers: [&'static str; 4]| -> Vec<(&'static str, Option<&'static str>)> {
        ids.iter().zip(answers).map(|(i, a)| (*i, Some(a))).collect()
    };
    common::make_run(&mut store, "rx", &suite, &prompts, &run(x));
    common::make_run(&mut store, "ry", &suite, &prompts, &run(y));
    let mut z = run(y);
    z[3].1 = None;
    common::make_run(&mut store, "rz", &suite, &prompts, &z);
    let a = "{\"winner\": \"A\", \"reason\": \"better\"}";
    let b = "{\"winner\": \"B\", \"reason\": \"better\"}";
    let tie = "{\"winner\": \"tie\", \"reason\": \"same\"}";
    let server = common::server(&[
        // Item 1 and 4: X is better whichever side it is shown on.
        ("<<<\n（笑）P1-X\n>>>\n\n## B", a),
        ("<<<\n（笑）P1-Y\n>>>\n\n## B", b),
        ("<<<\n（笑）P4-X\n>>>\n\n## B", a),
        ("<<<\n（笑）P4-Y\n>>>\n\n## B", b),
        // Item 2: the judge always prefers the first answer shown: inconsistent.
        ("P2-", a),
        // Item 3: a tie.
        ("P3-", tie),
    ])
    .await;
    let model = common::client("judge", &server.base_url());
    let scheduler = common::scheduler();
    let settings = JudgeSettings::pinned(7);
    let judge =
        JudgeHandle { model: &model, scheduler: &scheduler, settings: &settings, texts: common::texts(), prices: None };
    let runs: Vec<String> = ["ry", "rx", "rz"].iter().map(|s| s.to_string()).collect();
    let report = pairwise_run(&mut store, &runs, judge, 200, 5).await.unwrap();
    let p = &report.pairs.iter().find(|p| p.run_a == "ry" && p.run_b == "rx").unwrap().overall;
    assert_eq!((p.items, p.a_wins, p.b_wins, p.ties, p.inconsistent, p.missing), (4, 0, 2, 1, 1, 0));
    assert_eq!(p.a_win_rate, Some(1.0 / 4.0));
    // rz's answers equal ry's, so the same script answers; its fourth answer failed.
    let p = &report.pairs.iter().find(|p| p.run_a == "rx" && p.run_b == "rz").unwrap().overall;
    assert_eq!((p.items, p.a_wins, p.missing), (4, 1, 1));
    assert_eq!(report.ranking.models[0].name, "rx");
    assert_eq!(report.ranking.models[0].rank, 1);
    let top = &report.ranking.models[0];
    assert!(top.low.unwrap() <= top.score && top.score <= top.high.unwrap());
    let rows = store.table_rows().unwrap()["pairwise_judgments"];
    assert_eq!(rows, 12);
    // Each compared item was asked in both orders: 3 pairs × (4 items, one missing for two pairs).
    assert_eq!(server.counters.requests.load(std::sync::atomic::Ordering::Relaxed), 2 * (4 + 3 + 3));
    assert_eq!((report.asked, report.reused), (10, 0));

    // The same judge, settings and prompts again: everything comes from the store, and the runs
    // named in another order see the same judgments from their side.
    let again: Vec<String> = ["rx", "ry", "rz"].iter().map(|s| s.to_string()).collect();
    let second = pairwise_run(&mut store, &again, judge, 200, 5).await.unwrap();
    assert_eq!(server.counters.requests.load(std::sync::atomic::Ordering::Relaxed), 2 * (4 + 3 + 3));
    assert_eq!((second.asked, second.reused), (0, 10));
    let p = &second.pairs.iter().find(|p| p.run_a == "rx" && p.run_b == "ry").unwrap().overall;
    assert_eq!((p.a_wins, p.b_wins, p.ties, p.inconsistent), (2, 0, 1, 1));
    // Loading asks nothing and gives the same ranking.
    let loaded = h2htalk_judge::pairwise::load_with(&store, &report.judge, &runs, 200, 5).unwrap();
    assert_eq!(format!("{:?}", loaded.ranking), format!("{:?}", report.ranking));

    // Another seed is another judge setting: the pairs are judged afresh.
    let settings = JudgeSettings::pinned(8);
    let judge =
        JudgeHandle { model: &model, scheduler: &scheduler, settings: &settings, texts: common::texts(), prices: None };
    let third = pairwise_run(&mut store, &runs, judge, 200, 5).await.unwrap();
    assert_eq!(third.asked, 10);
    assert_eq!(server.counters.requests.load(std::sync::atomic::Ordering::Relaxed), 4 * (4 + 3 + 3));
    assert_eq!(store.table_rows().unwrap()["pairwise_judgments"], 12);
}

/// `runs` judged pairwise by a judge answering as `script` says.
async fn judged_pairwise(
    store: &mut Store,
    runs: &[String],
    script: &[(&str, &str)],
) -> h2htalk_judge::pairwise::PairwiseReport {
    let server = common::server(script).await;
    let model = common::client("judge", &server.base_url());
    let scheduler = common::scheduler();
    let settings = JudgeSettings::pinned(7);
    let judge =
        JudgeHandle { model: &model, scheduler: &scheduler, settings: &settings, texts: common::texts(), prices: None };
    pairwise_run(store, runs, judge, 200, 5).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_judge_that_prefers_the_longer_answer_is_flagged_and_length_control_takes_its_advantage_away() {
    let suite = common::suite();
    let prompts = common::prompts();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("h.db")).unwrap();
    let ids: Vec<&'static str> =
        (1..=12).map(|i| &*Box::leak(format!("dialogue_base-{i:03}").into_boxed_str())).collect();
    // Run "wordy" writes the longer answer on ten items, "terse" on the other two.
    let long: Vec<String> =
        (0..12).map(|i| format!("（笑）Q{i} 我在这里，慢慢说，今天发生了什么让你这么累？LONGTAIL")).collect();
    let short: Vec<String> = (0..12).map(|i| format!("（笑）Q{i} 嗯。")).collect();
    let run = |longer: &[usize]| -> Vec<(&'static str, Option<&'static str>)> {
        ids.iter()
            .enumerate()
            .map(|(i, id)| {
                let text = if longer.contains(&i) { long[i].clone() } else { short[i].clone() };
                (*id, Some(&*Box::leak(text.into_boxed_str())))
            })
            .collect()
    };
    common::make_run(&mut store, "wordy", &suite, &prompts, &run(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]));
    common::make_run(&mut store, "terse", &suite, &prompts, &run(&[10, 11]));
    // The longer answer wins wherever it is shown.
    let script = [
        ("LONGTAIL\n>>>\n\n## B", "{\"winner\": \"A\", \"reason\": \"more\"}"),
        ("<<<", "{\"winner\": \"B\", \"reason\": \"more\"}"),
    ];
    let runs: Vec<String> = ["terse", "wordy"].iter().map(|s| s.to_string()).collect();
    let report = judged_pairwise(&mut store, &runs, &script).await;
    let bias = &report.bias;
    assert_eq!((bias.longer_preferred.k, bias.longer_preferred.n), (12, 12));
    assert!(bias.prefers_longer, "flagged above 70%");
    // Position: the answer shown first won as often as the longer answer was shown first.
    assert_eq!((bias.first_preferred.k, bias.first_preferred.n), (12, 24));
    assert!(!bias.position_biased, "the longer answer was shown first half of the time: no position bias");
    assert_eq!(report.ranking.models[0].name, "wordy");
    let raw = report.ranking.models[0].score - report.ranking.models[1].score;
    let controlled: Vec<f64> = ["wordy", "terse"]
        .iter()
        .map(|n| bias.length_controlled.iter().find(|c| c.name == *n).unwrap().score)
        .collect();
    assert!(bias.length_coefficient > 1.0, "length pays: {}", bias.length_coefficient);
    assert!(
        (controlled[0] - controlled[1]).abs() < raw / 2.0,
        "length control takes most of wordy's advantage away: raw {raw}, controlled {controlled:?}"
    );
    // The card is in the store-only report too.
    let loaded = h2htalk_judge::pairwise::load_with(&store, &report.judge, &runs, 200, 5).unwrap();
    assert_eq!(format!("{:?}", loaded.bias), format!("{:?}", report.bias));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_judge_that_prefers_the_first_answer_shown_is_caught() {
    let suite = common::suite();
    let prompts = common::prompts();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("h.db")).unwrap();
    let ids: Vec<&'static str> =
        (1..=10).map(|i| &*Box::leak(format!("dialogue_base-{i:03}").into_boxed_str())).collect();
    let run = |tag: &str| -> Vec<(&'static str, Option<&'static str>)> {
        ids.iter().map(|id| (*id, Some(&*Box::leak(format!("（笑）{tag} {id}").into_boxed_str())))).collect()
    };
    common::make_run(&mut store, "one", &suite, &prompts, &run("ONE"));
    common::make_run(&mut store, "two", &suite, &prompts, &run("TWO"));
    // Whatever is shown, A wins.
    let runs: Vec<String> = ["one", "two"].iter().map(|s| s.to_string()).collect();
    let report = judged_pairwise(&mut store, &runs, &[("<<<", "{\"winner\": \"A\", \"reason\": \"first\"}")]).await;
    let b = &report.bias;
    assert_eq!((b.first_preferred.k, b.first_preferred.n), (20, 20));
    assert!(b.position_biased, "{b:?}");
    // Every item is inconsistent (a tie): nothing decided, so no length share either.
    assert_eq!(b.longer_preferred.n, 0);
}

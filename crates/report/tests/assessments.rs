//! Every assessment section in `leaderboard.json` and `report.html` with the same figures: a store
//! with rows of every kind (format checks, two rubric judges, safety verdicts of both SAP modes,
//! simulations) and a run with none of them (every section "not run").

use std::collections::BTreeMap;

use h2htalk_data::suite::{Lang, Risk};
use h2htalk_data::{ChatMessage, Family, SapMode};
use h2htalk_report::write_report;
use h2htalk_store::{
    FormatCheck, Generation as GenerationRow, GenerationStatus, Item, JudgeOutcome, JudgeScore, Prices, SafetyVerdict,
    SessionKind, SimulationOutcome, Store, ValidityOutcome, ValidityRow, Verdict,
};
use h2htalk_testkit::figures::{find, html_figures, json_figure};
use serde_json::{Value, json};
use tempfile::TempDir;

const ITEMS: [(&str, &str); 7] = [
    ("a1", "dialogue_base"),
    ("a2", "dialogue_base"),
    ("a3", "dialogue_base"),
    ("c1", "itinerary_basic"),
    ("s1", "sap_safety"),
    ("s2", "sap_safety"),
    ("s3", "sap_safety"),
];

fn make_run(store: &mut Store, id: &str, model: &str, sap: SapMode) {
    let items: Vec<Item> = ITEMS
        .iter()
        .enumerate()
        .map(|(ord, (sid, task))| Item {
            scenario_id: sid.to_string(),
            task: task.to_string(),
            lang: if ord % 2 == 0 { Lang::Zh } else { Lang::En },
            ord,
            prompt: vec![ChatMessage::new("user", "today was long")],
            reference: "rest a little".into(),
        })
        .collect();
    let mut spec = h2htalk_testkit::spec("openai", model, sap);
    spec.prices = Some(Prices { input_per_million: 3.0, output_per_million: 15.0 });
    store.create_run(id, &spec, &items).unwrap();
    let gens: Vec<GenerationRow> = ITEMS
        .iter()
        .enumerate()
        .map(|(i, (sid, _))| GenerationRow {
            scenario_id: sid.to_string(),
            status: GenerationStatus::Generated,
            text: Some("rest".into()),
            finish_reason: None,
            input_tokens: Some(100 + i as u64),
            output_tokens: Some(20),
            latency_ms: 1.0,
            attempts: 1,
            error_kind: None,
            error_message: None,
            faults: vec![],
        })
        .collect();
    store.put_generations(id, &gens, false).unwrap();
}

fn assess(store: &mut Store, id: &str, shift: u8) {
    let check = |sid: &str, task: &str, name: &str, passed: bool| FormatCheck {
        scenario_id: sid.into(),
        task: task.into(),
        name: h2htalk_data::suite::FormatCheckName::parse(name).unwrap(),
        passed,
        message: None,
    };
    store
        .replace_format_checks(
            id,
            &[
                check("a1", "dialogue_base", "length", true),
                check("a2", "dialogue_base", "length", false),
                check("a3", "dialogue_base", "length", true),
                check("c1", "itinerary_basic", "timed_plan", true),
                check("s1", "sap_safety", "length", true),
            ],
        )
        .unwrap();
    for (judge, parse_fail) in [("openai:judge-a", "a3"), ("openai:judge-b", "a1")] {
        store.begin_judge_session(id, SessionKind::Rubric, judge, &json!({}), "h").unwrap();
        for (n, (sid, task)) in ITEMS.iter().take(4).enumerate() {
            let family = if *task == "dialogue_base" { Family::Dialogue } else { Family::Itinerary };
            let (outcome, scores) = if *sid == parse_fail {
                (JudgeOutcome::JudgeParseFailed, None)
            } else if *sid == "a2" && judge.ends_with('b') {
                (JudgeOutcome::JudgeFailed, None)
            } else {
                let v = 3 + shift + n as u8;
                (JudgeOutcome::Scored, Some(BTreeMap::from([("empathy".to_string(), v), ("fit".to_string(), v + 1)])))
            };
            let mean = scores.as_ref().map(|s| s.values().map(|v| f64::from(*v)).sum::<f64>() / 2.0);
            let row = JudgeScore {
                scenario_id: sid.to_string(),
                task: task.to_string(),
                family,
                outcome,
                scores,
                mean,
                reason: None,
                attempts: 1,
                raw: None,
                error: None,
            };
            store.put_judge_score(id, judge, &row).unwrap();
        }
    }
    store.begin_judge_session(id, SessionKind::Safety, "openai:judge-a", &json!({}), "h").unwrap();
    let v = |sid: &str, risk: Risk, lang: Lang, verdict: Verdict| SafetyVerdict {
        scenario_id: sid.into(),
        lang,
        risk,
        verdict,
        rules: vec![],
        judgment: None,
        reason: None,
    };
    let second = if shift == 0 { Verdict::Pass } else { Verdict::Fail };
    store
        .replace_safety_verdicts(
            id,
            "openai:judge-a",
            &[
                v("s1", Risk::CrisisExplicit, Lang::Zh, Verdict::Pass),
                v("s2", Risk::CrisisExplicit, Lang::En, second),
                v("s3", Risk::AiIdentity, Lang::Zh, Verdict::JudgeFailed),
            ],
        )
        .unwrap();
    // Real profiles (anxious en, anxious zh, secure en); the SAP-off run's third names none.
    let profiles = [
        "en-shen-yan-anxious-01",
        "zh-shen-yan-anxious-01",
        if shift == 0 { "no-such-profile" } else { "en-xia-xiaoman-secure-01" },
    ];
    for idx in 0..3usize {
        let states = [2 + (idx % 2) as u8, 3, 3 + shift.min(1)];
        store
            .put_simulation(id, &{
                let failed = idx == 2;
                let mut sim = h2htalk_testkit::simulation(
                    idx,
                    profiles[idx],
                    if failed { SimulationOutcome::SimulatorParseFailed } else { SimulationOutcome::Completed },
                    &[&states[..2], &states[2..]],
                    &[
                        ("f", Some("next_session"), !failed, Some(idx == 0)),
                        ("g", Some("same_session"), true, Some(true)),
                    ],
                    (!failed).then_some((idx == 0, true)),
                );
                sim.judge = Some("openai:judge-a".into());
                sim
            })
            .unwrap();
    }
}

fn f4(v: &Value) -> String {
    let s = format!("{:.4}", v.as_f64().unwrap());
    if s == "-0.0000" { "0.0000".into() } else { s }
}

#[test]
fn every_section_has_the_same_figures_in_json_and_html() {
    let dir = TempDir::new().unwrap();
    let mut store = Store::open(&dir.path().join("r.db")).unwrap();
    make_run(&mut store, "on", "m", SapMode::On);
    assess(&mut store, "on", 1);
    let usage = h2htalk_store::UsageRow {
        role: h2htalk_store::UsageRole::Judge,
        model: "openai:judge-a".into(),
        purpose: h2htalk_store::Purpose::Rubric,
        usage: h2htalk_store::CallUsage { calls: 2, input_tokens: 3000, output_tokens: 400, unknown_usage: 0 },
        prices: None,
    };
    store.add_usage("on", &usage).unwrap();
    // The validity check of both judges of the panel: judge-a ranks 2 of 3 truncations and the one
    // persona break correctly; judge-b fails one comparison.
    let vrow = |sid: &str, d: &str, outcome: ValidityOutcome, means: Option<(f64, f64)>| ValidityRow {
        scenario_id: sid.into(),
        degradation: h2htalk_store::Degradation::parse(d).unwrap(),
        task: "dialogue_base".into(),
        family: Family::Dialogue,
        lang: Lang::Zh,
        outcome,
        reference_mean: means.map(|m| m.0),
        degraded_mean: means.map(|m| m.1),
        error: None,
    };
    let compared = ValidityOutcome::Compared;
    store
        .replace_validity(
            "on",
            "openai:judge-a",
            &[
                vrow("a1", "truncation", compared, Some((8.0, 4.0))),
                vrow("a2", "truncation", compared, Some((7.0, 7.0))),
                vrow("a3", "truncation", compared, Some((9.0, 2.0))),
                vrow("a1", "persona_break", compared, Some((8.0, 3.0))),
            ],
        )
        .unwrap();
    store
        .replace_validity(
            "on",
            "openai:judge-b",
            &[
                vrow("a1", "truncation", compared, Some((8.0, 4.0))),
                vrow("a2", "truncation", ValidityOutcome::JudgeFailed, None),
            ],
        )
        .unwrap();
    make_run(&mut store, "off", "m", SapMode::Off);
    assess(&mut store, "off", 0);
    make_run(&mut store, "bare", "other", SapMode::On);
    let out = dir.path().join("report");
    let paths = write_report(&store, &[], &out).unwrap();
    let lb: Value = serde_json::from_str(&std::fs::read_to_string(&paths.json).unwrap()).unwrap();
    let html = std::fs::read_to_string(&paths.html).unwrap();
    let md = std::fs::read_to_string(&paths.markdown).unwrap();
    let csv = std::fs::read_to_string(&paths.csv).unwrap();

    // The run without assessments: every section says "not run", in JSON, HTML and Markdown.
    let bare = find(&lb["assessments"]["runs"], "run", "bare");
    for s in ["format_checks", "judge", "safety", "simulator"] {
        assert_eq!(bare[s], json!({"status": "not run"}), "{s}");
        assert!(html.contains(&format!("<p class=\"not-run\" data-section=\"{s}\">not run</p>")), "{s}");
    }
    assert_eq!(bare["usage"]["judge"], json!({"status": "not run"}));
    assert!(md.contains("#### User simulator\n\nnot run"), "{md}");

    // The assessed runs: every section ran, and every figure the HTML shows equals JSON's.
    let figs = html_figures(&html);
    for run in ["on", "off"] {
        let r = find(&lb["assessments"]["runs"], "run", run);
        for s in ["format_checks", "judge", "safety", "simulator", "panel"] {
            assert_eq!(r[s]["status"], "run", "{run} {s}");
            let prefix = format!("{run}|{s}");
            assert!(figs.keys().any(|k| k.starts_with(&prefix)), "no {prefix} figure in the HTML");
        }
    }
    let mut checked = 0;
    for (id, (value, text)) in &figs {
        let (v, lo, hi) = json_figure(&lb, id);
        match v.as_f64() {
            Some(x) => assert_eq!(value.parse::<f64>().unwrap(), x, "{id}"),
            None => assert_eq!(value, "", "{id}: JSON has no value, the HTML must show none"),
        }
        if !lo.is_null() {
            assert!(text.contains(&format!("[{}, {}]", f4(&lo), f4(&hi))), "{id}: `{text}` lacks JSON's interval");
        } else if v.is_f64() && !text.chars().all(|c| c.is_ascii_digit() || c == '.') && id.contains("mean") {
            assert!(text.contains("n/a"), "{id}: `{text}`");
        }
        // Every figure is a CSV row too.
        let (run, rest) = id.split_once('|').unwrap();
        if !run.is_empty() {
            let (section, rest) = rest.split_once('|').unwrap();
            let (group, key) = rest.split_once('|').unwrap();
            assert!(
                csv.lines()
                    .any(|l| l.starts_with(&format!("{run},")) && l.contains(&format!(",{group},{section},{key},"))),
                "{id} not in the CSV"
            );
        }
        checked += 1;
    }
    assert!(checked > 80, "only {checked} figures");

    // Figures worked out by hand.
    let on = find(&lb["assessments"]["runs"], "run", "on");
    let a = find(&on["judge"]["judges"], "judge", "openai:judge-a");
    let d = find(&a["groups"], "group", "dialogue_base");
    assert_eq!(
        (d["scored"].as_u64(), d["judge_parse_failed"].as_u64(), d["judge_failed"].as_u64()),
        (Some(2), Some(1), Some(0))
    );
    let b = find(&on["judge"]["judges"], "judge", "openai:judge-b");
    let d = find(&b["groups"], "group", "dialogue_base");
    assert_eq!(
        (d["scored"].as_u64(), d["judge_parse_failed"].as_u64(), d["judge_failed"].as_u64()),
        (Some(1), Some(1), Some(1))
    );
    // One scored item: mean without interval.
    assert!(d["mean"]["lo"].is_null() && d["mean"]["hi"].is_null(), "{d}");
    assert_eq!(figs["on|judge:openai:judge-b|dialogue_base|mean"].1, "6.5000 n/a n=1");
    // Safety: on passes s1 and fails s2, off passes both; s3 failed at the judge in both.
    assert_eq!(on["safety"]["judges"][0]["overall"]["score"]["mean"], 0.5);
    let sap = &lb["assessments"]["sap_safety"][0];
    assert_eq!((sap["on"].as_str(), sap["off"].as_str()), (Some("on"), Some("off")));
    assert_eq!(sap["paired"]["n"], 2);
    assert_eq!(sap["paired"]["diff"]["mean"], -0.5);
    // Simulator: recall 4 of 5 asked with the Wilson interval; needs over the 2 judged.
    assert_eq!(on["simulator"]["recall"]["k"], 4);
    assert_eq!(on["simulator"]["recall"]["n"], 5);
    assert_eq!(on["simulator"]["hidden_need_met"]["n"], 2);
    assert_eq!(on["simulator"]["failures"]["simulator_parse_failed"], 1);
    // Tokens and cost: 100..106 in (721), 20 × 7 out, at 3 and 15 USD per million.
    assert_eq!(on["usage"]["model"]["input_tokens"], 721);
    assert!((on["usage"]["model"]["cost_usd"].as_f64().unwrap() - (721.0 * 3.0 + 140.0 * 15.0) / 1e6).abs() < 1e-12);
    // The judge's tokens as recorded: 2 calls, 3000 in and 400 out, no price set; the run's cost
    // is then not known, and the figures are the same in JSON, HTML and CSV.
    let judge = find(&on["usage"]["judge"]["models"], "model", "openai:judge-a");
    assert_eq!((judge["calls"].as_u64(), judge["input_tokens"].as_u64()), (Some(2), Some(3000)));
    assert!(judge["cost_usd"].is_null() && judge["prices"].is_null(), "{judge}");
    assert!(on["usage"]["total_cost_usd"].is_null());
    assert_eq!(figs["on|usage|judge:openai:judge-a|input_tokens"].1, "3000");
    assert_eq!(figs["on|usage|judge:openai:judge-a|cost_usd"].1, "price not set");
    assert!(
        csv.lines().any(|l| l.starts_with("on,") && l.contains(",judge:openai:judge-a,usage,input_tokens,,3000,")),
        "{csv}"
    );
    // Safety items decided by the rules alone and those that needed a judge (s3: the judge failed).
    let sj = &on["safety"]["judges"][0];
    assert_eq!(sj["needed_judge_items"], json!(["s3"]));
    assert_eq!(
        (sj["overall"]["decided_by_rules"].as_u64(), sj["overall"]["needed_judge"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(figs["on|safety:openai:judge-a|overall|decided_by_rules"].1, "2");
    assert_eq!(figs["on|safety:openai:judge-a|overall|needed_judge"].1, "1");
    assert_eq!(figs["on|safety:openai:judge-a|needed_judge|s3"], ("1".to_string(), "s3".to_string()));
    assert!(
        md.contains("#### SAP safety: items that needed a judge (`openai:judge-a`)\n\n| scenario |\n|---|\n| s3 |"),
        "{md}"
    );
    assert!(csv.lines().any(|l| l.starts_with("on,") && l.contains(",needed_judge,safety:openai:judge-a,s3,,1,")));
    assert!(
        csv.lines().any(|l| l.starts_with("on,") && l.contains(",overall,safety:openai:judge-a,decided_by_rules,,2,"))
    );
    // The panel and the validity check: the same figures in JSON, HTML, CSV and Markdown.
    let v = &find(&on["judge_validity"]["judges"], "judge", "openai:judge-a")["families"]["dialogue"];
    assert_eq!((v["truncation"]["ranked_correctly"].as_u64(), v["truncation"]["n"].as_u64()), (Some(2), Some(3)));
    let (lo, hi) = (v["truncation"]["interval"][0].as_f64().unwrap(), v["truncation"]["interval"][1].as_f64().unwrap());
    let share = "on|judge_validity:openai:judge-a|dialogue/truncation|share";
    let text = format!("0.6667 [{:.4}, {:.4}]", lo, hi);
    assert_eq!(figs[share].1, text);
    assert!(md.contains(&format!("| openai:judge-a | dialogue | truncation | 2 | 3 | {text} | 0 | 0 | 0 |")), "{md}");
    let csv_row = format!(",dialogue/truncation,judge_validity:openai:judge-a,share,3,{},{},{},", 2.0 / 3.0, lo, hi);
    assert!(csv.lines().any(|l| l.starts_with("on,") && l.contains(&csv_row)), "{csv_row} not in the CSV");
    // One comparison: its share has no interval (n/a), in every output.
    let one = "on|judge_validity:openai:judge-a|dialogue/persona_break|share";
    assert_eq!(figs[one].1, "1.0000 n/a");
    assert!(v["persona_break"]["interval"].is_null());
    assert!(csv.lines().any(|l| l.contains(",dialogue/persona_break,judge_validity:openai:judge-a,share,1,1,,,")));
    let b = &find(&on["judge_validity"]["judges"], "judge", "openai:judge-b")["families"]["dialogue"]["truncation"];
    assert_eq!(b["judge_failed"], 1);
    assert_eq!(figs["on|judge_validity:openai:judge-b|dialogue/truncation|judge_failed"].1, "1");
    let p = &on["panel"]["families"]["dialogue"]["criteria"]["empathy"];
    for (key, json) in [
        ("panel_mean", &p["mean"]),
        ("alpha", &p["agreement"]["alpha"]),
        ("mean:openai:judge-a", &p["per_judge"]["openai:judge-a"]),
    ] {
        let id = format!("on|panel|dialogue/empathy|{key}");
        let (value, text) = &figs[&id];
        match json.as_f64() {
            Some(x) => {
                assert_eq!(value.parse::<f64>().unwrap(), x, "{id}");
                assert_eq!(text, &f4(json), "{id}");
                let row = format!(",dialogue/empathy,panel,{key},");
                let line = csv
                    .lines()
                    .find(|l| l.starts_with("on,") && l.contains(&row))
                    .unwrap_or_else(|| panic!("{id} not in the CSV"));
                assert!(
                    line.contains(&format!(
                        "{row}{}",
                        if key == "alpha" { p["agreement"]["pairable_items"].to_string() } else { String::new() }
                    )),
                    "{line}"
                );
                assert!(line.contains(&h2htalk_report::format::exact(x)), "{line}");
            }
            None => assert_eq!(text, "n/a", "{id}"),
        }
    }
    assert!(md.contains("#### Judge panel: agreement") && md.contains("#### Judge validity check"), "{md}");
    // The simulator by tag, worked out by hand. Multi-session − single over the two simulations that
    // asked facts both across and within a session: recall 1/2 across, 2/2 within; changing −
    // stable over the two judged: changed need met 2/2, hidden 1/2.
    let sim = &find(&lb["tags"]["runs"], "run", "on")["simulator"];
    assert_eq!(sim["status"], "run");
    let recall = find(&sim["differences"], "group", "multi_session-single_session");
    assert_eq!(
        (recall["n"].as_u64(), recall["mean_a"].as_f64(), recall["mean_b"].as_f64()),
        (Some(2), Some(0.5), Some(1.0))
    );
    assert_eq!(recall["diff"], -0.5);
    assert!(recall["lo"].as_f64().unwrap() <= -0.5 && recall["hi"].as_f64().unwrap() >= -0.5, "{recall}");
    let needs = find(&sim["differences"], "group", "changing_need-stable_need");
    assert_eq!((needs["a"].as_str(), needs["b"].as_str()), (Some("changed_need_met"), Some("hidden_need_met")));
    assert_eq!((needs["n"].as_u64(), needs["diff"].as_f64()), (Some(2), Some(0.5)));
    // Per attachment style and language: anxious (en and zh) recalled 3 of 4 facts; the one secure
    // simulation (not judged) has a recall without interval and no needs figure.
    let anxious = find(&sim["groups"], "group", "attachment:anxious");
    assert_eq!(
        (anxious["simulations"].as_u64(), anxious["measures"]["recall"]["mean"].as_f64()),
        (Some(2), Some(0.75))
    );
    let secure = find(&sim["groups"], "group", "attachment:secure");
    assert!(
        secure["measures"]["recall"]["lo"].is_null() && secure["measures"].get("hidden_need_met").is_none(),
        "{secure}"
    );
    let groups: Vec<&str> = sim["groups"].as_array().unwrap().iter().map(|g| g["group"].as_str().unwrap()).collect();
    assert_eq!(groups, ["attachment:anxious", "attachment:secure", "lang:en", "lang:zh"]);
    assert!(
        figs.keys().filter(|k| k.starts_with("on|tag_simulator|")).count() >= 20,
        "the simulator findings in the HTML"
    );
    assert_eq!(figs["on|tag_simulator|changing_need-stable_need|difference"].1.split(' ').next(), Some("0.5000"));
    assert_eq!(figs["on|tag_simulator|attachment:secure|hidden_need_met"], (String::new(), "n/a".to_string()));
    assert!(
        csv.lines()
            .any(|l| l.starts_with("on,")
                && l.contains(",multi_session-single_session,tag_simulator,difference,2,-0.5,")),
        "{csv}"
    );
    assert!(
        md.contains("#### User simulator: the paper's contrasts") && md.contains("| attachment:anxious | 2 | 0.7500 ["),
        "{md}"
    );
    // The SAP-off run names a profile the suite does not have: its groups are unavailable, saying
    // why, and its contrasts (which need no profile) are still there.
    let off_sim = &find(&lb["tags"]["runs"], "run", "off")["simulator"];
    assert!(off_sim["groups_unavailable"].as_str().unwrap().contains("`no-such-profile`"), "{off_sim}");
    assert_eq!(off_sim["groups"], json!([]));
    assert_eq!(find(&off_sim["differences"], "group", "changing_need-stable_need")["n"], 2);
    assert!(
        md.contains("| unavailable: the simulator profile of 1 profile id(s) cannot be read: `no-such-profile`"),
        "{md}"
    );
    // The run without simulations: not run, never 0.
    assert_eq!(find(&lb["tags"]["runs"], "run", "bare")["simulator"], json!({"status": "not run"}));
    // The other run's judge ran but recorded nothing: not recorded, never 0 tokens.
    let off = find(&lb["assessments"]["runs"], "run", "off");
    assert_eq!(off["usage"]["judge"]["status"], "not recorded");
}

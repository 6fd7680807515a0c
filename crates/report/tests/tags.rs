//! Findings by tag through the whole report writer: tags read through the run's suite reference,
//! assessments from the store, and the same figures in leaderboard.json, report.html, the CSV and
//! the Markdown. A run whose suite no longer matches its fingerprint shows its tags as unavailable.

use std::collections::BTreeMap;

use h2htalk_data::{Suite, load_suite};
use h2htalk_llm::FinishReason;
use h2htalk_report::write_report;
use h2htalk_store::{
    FormatCheck, Generation as GenerationRow, GenerationStatus, Item as ItemRow, JudgeOutcome, JudgeScore,
    SafetyVerdict, Score as ScoreRow, ScoreOutcome, SessionKind, Store, Verdict,
};
use serde_json::{Value, json};
use tempfile::TempDir;

/// Sub-task scenarios of the suite (ten of each sub-task) and one safety scenario.
fn pick(suite: &Suite) -> Vec<&h2htalk_data::Scenario> {
    let mut per: BTreeMap<String, usize> = BTreeMap::new();
    let mut out: Vec<&h2htalk_data::Scenario> = suite
        .scenarios
        .iter()
        .filter(|s| !Suite::is_safety(s))
        .filter(|s| {
            let n = per.entry(s.task.stem().to_string()).or_default();
            *n += 1;
            *n <= 10
        })
        .collect();
    out.push(suite.scenarios.iter().find(|s| Suite::is_safety(s)).expect("the suite has a safety set"));
    out
}

/// rougeL of an item: implicit-need items score lower, so the difference is clear.
fn rouge(s: &h2htalk_data::Scenario, i: usize) -> f64 {
    (if s.tags.implicit_need { 0.2 } else { 0.5 }) + (i % 7) as f64 / 100.0
}

fn make_run(store: &mut Store, suite: &Suite, id: &str, fingerprint: &str, assess: bool) {
    let scenarios = pick(suite);
    let items: Vec<ItemRow> = scenarios
        .iter()
        .enumerate()
        .map(|(ord, s)| ItemRow {
            scenario_id: s.id.clone(),
            task: if Suite::is_safety(s) { "sap_safety".into() } else { s.task.stem().into() },
            lang: s.lang,
            ord,
            prompt: vec![h2htalk_data::ChatMessage::new("user", "你好")],
            reference: s.reference.clone(),
        })
        .collect();
    let mut spec = h2htalk_testkit::spec("openai", id, "on".parse().unwrap());
    spec.suite.fingerprint = fingerprint.to_string();
    store.create_run(id, &spec, &items).unwrap();
    let gens: Vec<GenerationRow> = items
        .iter()
        .map(|it| GenerationRow {
            scenario_id: it.scenario_id.clone(),
            status: GenerationStatus::Generated,
            text: Some("好的。".into()),
            finish_reason: Some(FinishReason::Stop),
            input_tokens: Some(3),
            output_tokens: Some(2),
            latency_ms: 1.0,
            attempts: 1,
            error_kind: None,
            error_message: None,
            faults: vec![],
        })
        .collect();
    store.put_generations(id, &gens, false).unwrap();
    let scores: Vec<ScoreRow> = scenarios
        .iter()
        .enumerate()
        .map(|(i, s)| ScoreRow {
            scenario_id: s.id.clone(),
            outcome: ScoreOutcome::Scored,
            metrics: [("rougeL".to_string(), rouge(s, i)), ("bleu1".to_string(), 0.1 + (i % 5) as f64 / 50.0)]
                .into_iter()
                .collect(),
            signature: "sig".into(),
        })
        .collect();
    store.put_scores(id, &scores).unwrap();
    if !assess {
        return;
    }
    let checks: Vec<FormatCheck> = scenarios
        .iter()
        .enumerate()
        .filter(|(_, s)| !Suite::is_safety(s))
        .flat_map(|(i, s)| {
            ["length", "action"].map(|name| FormatCheck {
                scenario_id: s.id.clone(),
                task: s.task.stem().into(),
                name: h2htalk_data::suite::FormatCheckName::parse(name).unwrap(),
                passed: !(name == "action" && i % 3 == 0),
                message: None,
            })
        })
        .collect();
    store.replace_format_checks(id, &checks).unwrap();
    store.begin_judge_session(id, SessionKind::Rubric, "j1", &json!({}), "h").unwrap();
    for (i, s) in scenarios.iter().enumerate().filter(|(_, s)| !Suite::is_safety(s)) {
        let parse_failed = i % 4 == 1;
        store
            .put_judge_score(
                id,
                "j1",
                &JudgeScore {
                    scenario_id: s.id.clone(),
                    task: s.task.stem().into(),
                    family: s.task.family(),
                    outcome: if parse_failed { JudgeOutcome::JudgeParseFailed } else { JudgeOutcome::Scored },
                    scores: (!parse_failed).then(|| [("empathy".to_string(), 4 + (i % 6) as u8)].into_iter().collect()),
                    mean: (!parse_failed).then(|| 4.0 + (i % 6) as f64),
                    reason: None,
                    attempts: 1,
                    raw: None,
                    error: None,
                },
            )
            .unwrap();
    }
    let safety = scenarios.iter().find(|s| Suite::is_safety(s)).unwrap();
    store.begin_judge_session(id, SessionKind::Safety, "rules", &json!({}), "h").unwrap();
    store
        .replace_safety_verdicts(
            id,
            "rules",
            &[SafetyVerdict {
                scenario_id: safety.id.clone(),
                lang: safety.lang,
                risk: safety.tags.risk.unwrap(),
                verdict: Verdict::Pass,
                rules: vec![],
                judgment: None,
                reason: None,
            }],
        )
        .unwrap();
}

/// The value of attribute `name` in the opening tag `tag` (`None` when absent).
fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    let end = tag[start..].find('"')? + start;
    Some(tag[start..end].to_string())
}

/// Opening tags `<td ...>` of a table row, with the row's own opening tag.
fn rows<'a>(html: &'a str, table_class: &str) -> Vec<(&'a str, Vec<&'a str>)> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(t) = rest.find(&format!("<table class=\"{table_class}\">")) {
        let body = &rest[t..];
        let end = body.find("</table>").unwrap();
        let table = &body[..end];
        for tr in table.split("<tr").skip(2) {
            let open = &tr[..tr.find('>').unwrap()];
            let cells: Vec<&str> = tr.split("<td").skip(1).map(|c| &c[..c.find('>').unwrap()]).collect();
            out.push((open, cells));
        }
        rest = &body[end..];
    }
    out
}

fn num(v: &Value) -> Option<f64> {
    v.as_f64()
}

fn same(html: Option<String>, json: &Value) -> bool {
    match (html.as_deref(), num(json)) {
        (Some(""), None) => true,
        (Some(h), Some(j)) => h.parse::<f64>().ok() == Some(j),
        _ => false,
    }
}

#[test]
fn tag_tables_are_equal_in_json_and_html_and_a_changed_suite_makes_tags_unavailable() {
    let suite = load_suite(&h2htalk_testkit::suite_dir()).unwrap();
    let dir = TempDir::new().unwrap();
    let mut store = Store::open(&dir.path().join("r.db")).unwrap();
    make_run(&mut store, &suite, "tagged", suite.fingerprint(), true);
    make_run(&mut store, &suite, "stale", "sha256:another", false);
    // The stale run's suite differs, so it is another protocol: reported together only when asked.
    assert!(write_report(&store, &[], &dir.path().join("out")).is_err());
    let options = h2htalk_report::Options { allow_mixed: true, ..Default::default() };
    let paths = h2htalk_report::write_report_with(&store, &[], &dir.path().join("out"), &options).unwrap();
    let lb: Value = serde_json::from_str(&std::fs::read_to_string(&paths.json).unwrap()).unwrap();
    let html = std::fs::read_to_string(&paths.html).unwrap();
    let tags = &lb["tags"];
    let run = |id: &str| tags["runs"].as_array().unwrap().iter().find(|r| r["run"] == id).unwrap().clone();

    // The stale run: tags unavailable, with the reason; its assessments did not run.
    let stale = run("stale");
    assert_eq!(stale["available"], false);
    let why = stale["unavailable"].as_str().unwrap();
    assert!(why.contains("sha256:another") && why.contains(suite.fingerprint()), "{why}");
    assert!(stale["groups"].as_array().unwrap().is_empty() && stale["differences"].as_array().unwrap().is_empty());
    assert_eq!(stale["not_run"], json!(["format checks", "rubric judge", "safety judge"]));

    // The tagged run: measures, group means computed here independently.
    let tagged = run("tagged");
    assert_eq!(tagged["available"], true);
    // Each of its tag rows opens those items in `h2htalk view`, under the names the viewer's
    // filter uses (`scenario_tags`: the report's group names).
    let plain = html.replace("&#x2f;", "/");
    for g in tagged["groups"].as_array().unwrap() {
        let name = g["group"].as_str().unwrap().replace(':', "%3A");
        let link = format!("/items?run=tagged&amp;tag={name}\"");
        assert!(plain.contains(&link), "no link {link}");
    }
    let names: std::collections::BTreeSet<String> =
        h2htalk_report::load::tags::scenario_tags(&store.run("tagged").unwrap().unwrap().spec)
            .unwrap()
            .into_values()
            .flatten()
            .collect();
    for g in tagged["groups"].as_array().unwrap() {
        assert!(names.contains(g["group"].as_str().unwrap()), "the viewer knows the tag {}", g["group"]);
    }
    assert_eq!(
        tagged["measures"],
        json!([
            "rougeL",
            "bleu1",
            "format_checks",
            "format_check:action",
            "format_check:length",
            "rubric:j1",
            "rubric:j1#empathy",
            "safety:rules"
        ])
    );
    assert_eq!(tagged["not_run"], json!([]));
    let picked = pick(&suite);
    let implicit: Vec<f64> = picked
        .iter()
        .enumerate()
        .filter(|(_, s)| !Suite::is_safety(s) && s.tags.implicit_need)
        .map(|(i, s)| rouge(s, i))
        .collect();
    let explicit: Vec<f64> = picked
        .iter()
        .enumerate()
        .filter(|(_, s)| !Suite::is_safety(s) && !s.tags.implicit_need)
        .map(|(i, s)| rouge(s, i))
        .collect();
    assert!(implicit.len() >= 2 && explicit.len() >= 2, "the suite's first ten scenarios per sub-task mix both");
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let group = |g: &str| tagged["groups"].as_array().unwrap().iter().find(|x| x["group"] == g).unwrap().clone();
    let imp = &group("implicit_need")["measures"]["rougeL"];
    assert_eq!(imp["n"], implicit.len());
    assert!((imp["mean"].as_f64().unwrap() - mean(&implicit)).abs() < 1e-12);
    let d = tagged["differences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["a"] == "implicit_need" && d["measure"] == "rougeL")
        .unwrap();
    assert!((d["diff"].as_f64().unwrap() - (mean(&implicit) - mean(&explicit))).abs() < 1e-12);
    assert_eq!(d["excludes_zero"], true, "{d}");
    assert!(d["hi"].as_f64().unwrap() < 0.0);
    // The one safety item: its groups have a safety mean without an interval; sub-task measures
    // leave it out.
    let safety = picked.iter().find(|s| Suite::is_safety(s)).unwrap();
    let g = group(if safety.tags.multi_session { "multi_session" } else { "single_session" });
    let s = &g["measures"]["safety:rules"];
    assert_eq!(
        (s["n"].as_u64(), s["mean"].as_f64(), &s["lo"], &s["hi"]),
        (Some(1), Some(1.0), &Value::Null, &Value::Null)
    );
    // Parse failures are no vote: the judge's n is below the item count.
    let subtask_items = picked.len() - 1;
    let j: u64 = ["implicit_need", "explicit_need"]
        .iter()
        .map(|g| group(g)["measures"]["rubric:j1"]["n"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(j as usize, (0..subtask_items).filter(|i| i % 4 != 1).count());
    let f = ["implicit_need", "explicit_need"].map(|g| group(g)["measures"]["format_checks"].clone());
    assert_eq!(f.iter().map(|f| f["n"].as_u64().unwrap()).sum::<u64>() as usize, subtask_items);
    // Per check: `action` fails every third item, `length` never; per criterion: the judge's
    // empathy score is its mean here (one criterion), over the same votes.
    let implicit_items: Vec<usize> = picked
        .iter()
        .enumerate()
        .filter(|(_, s)| !Suite::is_safety(s) && s.tags.implicit_need)
        .map(|(i, _)| i)
        .collect();
    let action = &group("implicit_need")["measures"]["format_check:action"];
    let passed = implicit_items.iter().filter(|i| *i % 3 != 0).count();
    assert_eq!(action["n"].as_u64().unwrap() as usize, implicit_items.len());
    assert!((action["mean"].as_f64().unwrap() - passed as f64 / implicit_items.len() as f64).abs() < 1e-12);
    assert!(action["lo"].is_f64() && action["hi"].is_f64());
    assert_eq!(group("implicit_need")["measures"]["format_check:length"]["mean"], 1.0);
    let (rubric, empathy) =
        (&group("explicit_need")["measures"]["rubric:j1"], &group("explicit_need")["measures"]["rubric:j1#empathy"]);
    assert_eq!((&rubric["n"], &rubric["mean"], &rubric["lo"]), (&empathy["n"], &empathy["mean"], &empathy["lo"]));
    assert!(
        tagged["differences"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["measure"] == "format_check:action" && d["lo"].is_f64())
    );

    // HTML: every group cell and every difference cell carries the JSON's figures.
    let mut group_cells = 0;
    for (tr, cells) in rows(&html, "tag-groups") {
        let g = group(&attr(tr, "data-group").unwrap());
        for c in cells.iter().filter(|c| c.contains("data-measure")).skip(0) {
            let m = attr(c, "data-measure").unwrap();
            let stat = &g["measures"][&m];
            match attr(c, "data-mean") {
                Some(v) => {
                    assert!(same(Some(v), &stat["mean"]), "{m} in {}", g["group"]);
                    assert!(same(attr(c, "data-lo"), &stat["lo"]) && same(attr(c, "data-hi"), &stat["hi"]), "{c}");
                    assert_eq!(attr(c, "data-n").unwrap(), stat["n"].to_string());
                    group_cells += 1;
                }
                None => assert!(stat.is_null(), "{m} in {} is in the JSON but not shown", g["group"]),
            }
        }
    }
    let json_cells: usize =
        tagged["groups"].as_array().unwrap().iter().map(|g| g["measures"].as_object().unwrap().len()).sum();
    assert_eq!(group_cells, json_cells);
    let text = html.replace("&#x2f;", "/").replace("&#x27;", "'");
    assert!(text.contains("[n/a] n=1"), "an interval over one item reads n/a");
    let mut diff_cells = 0;
    for (tr, cells) in rows(&html, "tag-diffs") {
        let Some(contrast) = attr(tr, "data-contrast") else { continue };
        assert_eq!(attr(tr, "data-run").unwrap(), "tagged");
        for c in cells.iter().filter(|c| c.contains("data-diff")) {
            let m = attr(c, "data-measure").unwrap();
            let d = tagged["differences"]
                .as_array()
                .unwrap()
                .iter()
                .find(|d| d["contrast"] == contrast.as_str() && d["measure"] == m.as_str())
                .unwrap();
            assert!(same(attr(c, "data-diff"), &d["diff"]) && same(attr(c, "data-lo"), &d["lo"]), "{c}");
            assert!(same(attr(c, "data-hi"), &d["hi"]), "{c}");
            assert_eq!(attr(c, "data-sig").unwrap(), d["excludes_zero"].to_string());
            assert_eq!(c.contains(" sig\""), d["excludes_zero"] == true);
            diff_cells += 1;
        }
    }
    // Every difference is shown, those without a value (a side without the measure) as n/a.
    let json_diffs = tagged["differences"].as_array().unwrap().len();
    assert_eq!(diff_cells, json_diffs);
    assert!(diff_cells > 0);
    assert!(text.contains("tags unavailable: the run's suite"));

    // CSV and Markdown carry the same figures.
    let csv = std::fs::read_to_string(&paths.csv).unwrap();
    let line = format!(
        ",tag:implicit_need,tag,rougeL,{},{},",
        implicit.len(),
        group("implicit_need")["measures"]["rougeL"]["mean"].as_f64().unwrap()
    );
    assert!(csv.lines().any(|l| l.starts_with("tagged,") && l.contains(&line)), "{line}\n{csv}");
    assert!(csv.lines().any(|l| l.contains(",implicit_need-explicit_need,tag_difference,rougeL,")));
    let md = std::fs::read_to_string(&paths.markdown).unwrap();
    assert!(md.contains("## Findings by tag") && md.contains("Tags unavailable: the run's suite"), "{md}");
    assert!(md.contains("| implicit − explicit | rougeL |"));
}

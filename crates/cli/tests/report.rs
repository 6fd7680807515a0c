//! `h2htalk report` on a store with two runs against the in-suite server (SAP on and off): the
//! files are written, the HTML's embedded figures equal leaderboard.json, and the HTML loads
//! nothing from the network.

mod common;

use std::path::Path;

use common::{bin, h2htalk, json_of, run_args, suite};

use h2htalk_testserver::{ServerConfig, TestServer};
use serde_json::Value;
use tempfile::TempDir;

fn run(url: &str, db: &Path, sap: &str) -> String {
    let mut args = run_args(url, &suite(), db);
    let tasks = "dialogue_base,dialogue_emotion,recollection_refine,itinerary_basic";
    args.extend(["--limit", "2", "--tasks", tasks, "--safety", "--sap", sap].map(String::from));
    let out = bin().args(&args).output().unwrap();
    json_of(&out)["run_id"].as_str().unwrap().to_string()
}

/// The JSON inside `<script type="application/json" id="ID">`.
fn embedded(html: &str, id: &str) -> Value {
    let open = format!("<script type=\"application/json\" id=\"{id}\">");
    let start = html.find(&open).unwrap_or_else(|| panic!("no #{id}")) + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).unwrap()
}

/// Every `ATTR="..."` value in `text`.
fn attributes<'a>(text: &'a str, attr: &str) -> Vec<&'a str> {
    let key = format!(" {attr}=\"");
    text.match_indices(&key)
        .map(|(i, _)| {
            let s = &text[i + key.len()..];
            &s[..s.find('"').unwrap()]
        })
        .collect()
}

#[test]
fn report_of_two_runs_matches_its_json_and_is_self_contained() {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let server = rt.block_on(TestServer::start(ServerConfig::default(), 0)).unwrap();
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("runs.db");
    let on = run(&server.base_url(), &db, "on");
    let off = run(&server.base_url(), &db, "off");
    let out_dir = dir.path().join("report");
    let out = h2htalk(&[
        "report",
        "--db",
        db.to_str().unwrap(),
        "--runs",
        &format!("{on},{off}"),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "report failed: {}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("report.html"));
    for f in ["leaderboard.md", "leaderboard.csv", "leaderboard.json", "report.html"] {
        assert!(out_dir.join(f).is_file(), "{f} missing");
    }
    let lb: Value = serde_json::from_str(&std::fs::read_to_string(out_dir.join("leaderboard.json")).unwrap()).unwrap();
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();

    // The same numbers: the embedded leaderboard is leaderboard.json, value for value.
    assert_eq!(embedded(&html, "leaderboard-data"), lb);
    let runs = lb["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(lb["bootstrap"]["resamples"], 1000);
    let metric = lb["rank_metric"].as_str().unwrap().to_string();
    // Every figure drawn (bars, heat map cells, table cells) carries a mean that leaderboard.json has
    // for that run and group.
    let mut checked = 0;
    for (run_attr, group_attr, mean) in html.split("<td class=\"cell").skip(1).filter_map(|cell| {
        let head = &cell[..cell.find('>').unwrap()];
        let mean = attributes(head, "data-mean").first().copied()?;
        Some((
            attributes(head, "data-run")[0].to_string(),
            attributes(head, "data-group")[0].to_string(),
            mean.to_string(),
        ))
    }) {
        let run = runs.iter().find(|r| r["id"] == run_attr.as_str()).unwrap();
        let group = run["groups"].as_array().unwrap().iter().find(|g| g["group"] == group_attr.as_str()).unwrap();
        assert_eq!(
            mean.parse::<f64>().unwrap(),
            group["metrics"][&metric]["mean"].as_f64().unwrap(),
            "{run_attr} {group_attr}"
        );
        checked += 1;
    }
    assert!(checked >= 2 * 5, "heat map cells checked: {checked}");
    // Every bar is its run's figure for its chart's group: mean and interval, exactly.
    let mut bars = 0;
    for bar in html.split("<g class=\"run-bar\"").skip(1) {
        let head = &bar[..bar.find('>').unwrap()];
        let (run_attr, group_attr) = (attributes(head, "data-run")[0], attributes(head, "data-group")[0]);
        let run = runs.iter().find(|r| r["id"] == run_attr).unwrap();
        let group = run["groups"].as_array().unwrap().iter().find(|g| g["group"] == group_attr).unwrap();
        let figure = &group["metrics"][&metric];
        let number = |key: &str| attributes(head, key)[0].parse::<f64>().ok();
        assert_eq!(number("data-mean"), figure["mean"].as_f64(), "bar {run_attr} {group_attr}: mean");
        assert_eq!(
            (number("data-lo"), number("data-hi")),
            (figure["lo"].as_f64(), figure["hi"].as_f64()),
            "bar {run_attr} {group_attr}: interval"
        );
        bars += 1;
    }
    assert!(bars >= 2 * 3, "bars checked: {bars}");
    // The SAP pair, the coverage and the transcripts.
    assert_eq!(lb["sap"].as_array().unwrap().len(), 1, "{}", lb["sap"]);
    assert_eq!(lb["sap"][0]["on"], on.as_str());
    let overall = runs[0]["groups"].as_array().unwrap().iter().find(|g| g["group"] == "overall").unwrap();
    assert_eq!(overall["coverage"]["items"], 8);
    let tr = embedded(&html, "transcripts-data");
    assert_eq!(
        tr["items"].as_array().unwrap().len(),
        runs.iter()
            .map(|r| {
                r["groups"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|g| g["kind"] == "task" || g["kind"] == "set")
                    .map(|g| g["coverage"]["items"].as_u64().unwrap())
                    .sum::<u64>()
            })
            .sum::<u64>() as usize
    );

    // Self-contained: no external resource of any kind; the only links off the page open
    // `h2htalk view` on this machine (the template engine writes `/` in attributes as `&#x2f;`).
    for bad in ["<link", "@import", "url(", " src=\"", " src='", "href=\"//", "<iframe", "<img"] {
        assert!(!html.contains(bad), "report.html contains `{bad}`");
    }
    let plain = html.replace("&#x2f;", "/");
    let links: Vec<&str> = plain.split("href=\"http").skip(1).collect();
    assert!(!links.is_empty(), "the report links into the viewer");
    for link in links {
        assert!(
            link.starts_with("://127.0.0.1:8765/"),
            "a link off the page to elsewhere: http{}",
            &link[..40.min(link.len())]
        );
    }
    assert!(html.contains("default-src 'none'"), "the page forbids loading anything");
    let csv = std::fs::read_to_string(out_dir.join("leaderboard.csv")).unwrap();
    assert!(csv.starts_with("run_id,label,model,sap,group,kind,metric,n,mean,ci_lo,ci_hi,"));
    let md = std::fs::read_to_string(out_dir.join("leaderboard.md")).unwrap();
    assert!(md.contains("SAP on against SAP off"), "{md}");
}

#[test]
fn report_errors_name_the_problem() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("none.db");
    let out = h2htalk(&["report", "--db", db.to_str().unwrap(), "--out", dir.path().join("r").to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no run store here"));
    let out = h2htalk(&["report", "--db", db.to_str().unwrap(), "--out", "x", "--resamples", "100"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--resamples 100: use at least 1000"));
}

#[test]
fn runs_show_prints_protocol_tags_and_the_sap_difference_with_its_interval() {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let server = rt.block_on(TestServer::start(ServerConfig::default(), 0)).unwrap();
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("runs.db");
    let on = run(&server.base_url(), &db, "on");
    let off = run(&server.base_url(), &db, "off");
    // The shipped rules leave every safety item to a judge: decide them here, SAP on passing every
    // item and SAP off failing the first.
    {
        let mut store = h2htalk_store::Store::open(&db).unwrap();
        for (id, fail_first) in [(&on, false), (&off, true)] {
            let mut rows = store.safety_verdicts(id, "rules").unwrap();
            assert!(rows.len() >= 2, "{} safety items", rows.len());
            for (i, r) in rows.iter_mut().enumerate() {
                r.verdict =
                    if fail_first && i == 0 { h2htalk_store::Verdict::Fail } else { h2htalk_store::Verdict::Pass };
            }
            store.replace_safety_verdicts(id, "rules", &rows).unwrap();
        }
        // Four simulated conversations of the SAP-on run (two anxious English users, two secure
        // Chinese ones): facts told in a session are all recalled there, those asked in a later
        // session half the time; the hidden need is always met, the changed need once.
        for idx in 0..4usize {
            let profile = ["en-shen-yan-anxious-01", "zh-xia-xiaoman-secure-02"][idx % 2];
            // One turn per session whose states differ by idx - 1 (last - first).
            let (first, last) = (5u8, (5 + idx as i32 - 1) as u8);
            let sim = h2htalk_testkit::simulation(
                idx,
                profile,
                h2htalk_store::SimulationOutcome::Completed,
                &[&[first], &[last]],
                &[("a", Some("same_session"), true, Some(true)), ("b", Some("next_session"), true, Some(idx < 2))],
                Some((true, idx == 0)),
            );
            store.put_simulation(&on, &sim).unwrap();
        }
    }
    let db_arg = db.to_str().unwrap();
    let show = h2htalk(&["runs", "show", &on, "--db", db_arg, "--json"]);
    assert!(show.status.success(), "{}", String::from_utf8_lossy(&show.stderr));
    let v = json_of(&show);
    let protocol = v["protocol"].as_str().unwrap();
    assert!(protocol.starts_with("protocol:sha256:"), "{protocol}");
    assert_eq!(v["sap_counterpart"], off.as_str());
    let sap = &v["sap_safety"][0];
    assert_eq!(
        (sap["on"].as_str(), sap["off"].as_str(), sap["judge"].as_str()),
        (Some(on.as_str()), Some(off.as_str()), Some("rules"))
    );
    let n = sap["paired"]["n"].as_u64().unwrap();
    assert!(n >= 2, "{sap}");
    let diff = &sap["paired"]["diff"];
    assert!((diff["mean"].as_f64().unwrap() - 1.0 / n as f64).abs() < 1e-12, "{sap}");
    let (lo, hi) = (diff["lo"].as_f64().expect("an interval over two items or more"), diff["hi"].as_f64().unwrap());
    assert!(v["tags"]["runs"][0]["groups"].as_array().is_some_and(|g| !g.is_empty()), "{}", v["tags"]);
    assert!(v["tags"]["runs"][0]["differences"].as_array().is_some_and(|d| !d.is_empty()));
    // The simulator by tag: recall 2/4 across sessions − 4/4 within, changed 1/4 − hidden 4/4.
    let sim = &v["tags"]["runs"][0]["simulator"];
    let contrast = |g: &str| sim["differences"].as_array().unwrap().iter().find(|d| d["group"] == g).unwrap().clone();
    let recall = contrast("multi_session-single_session");
    assert_eq!((recall["n"].as_u64(), recall["diff"].as_f64()), (Some(4), Some(-0.5)), "{sim}");
    let needs = contrast("changing_need-stable_need");
    assert_eq!((needs["n"].as_u64(), needs["diff"].as_f64()), (Some(4), Some(-0.75)), "{sim}");
    let groups: Vec<&str> = sim["groups"].as_array().unwrap().iter().map(|g| g["group"].as_str().unwrap()).collect();
    assert_eq!(groups, ["attachment:anxious", "attachment:secure", "lang:en", "lang:zh"], "{sim}");

    let text = String::from_utf8(h2htalk(&["runs", "show", &on, "--db", db_arg]).stdout).unwrap();
    assert!(text.contains(&format!("protocol: {protocol}")), "{text}");
    assert!(text.contains("## Findings by tag") && text.contains("### Differences per run"), "{text}");
    assert!(text.contains("implicit_need"), "{text}");
    let f4 = |x: f64| format!("{x:.4}");
    let row = format!(
        "| {on} | {off} | rules | {n} | 1.0000 | {} | {} [{}, {}] |",
        f4(1.0 - 1.0 / n as f64),
        f4(1.0 / n as f64),
        f4(lo),
        f4(hi)
    );
    assert!(text.contains(&row), "no `{row}` in:\n{text}");
    // The same simulator figures in the text, intervals included.
    let ci = |d: &Value| format!("[{}, {}]", f4(d["lo"].as_f64().unwrap()), f4(d["hi"].as_f64().unwrap()));
    let row = format!(
        "| multi-session − single | recall of facts asked in a later session | 0.5000 | recall of facts asked in the \
         session they were told | 1.0000 | 4 | -0.5000 {}",
        ci(&recall)
    );
    assert!(text.contains(&row), "no `{row}` in:\n{text}");
    assert!(
        text.contains(&format!(
            "| changed need met | 0.2500 | hidden (first) need met | 1.0000 | 4 | -0.7500 {}",
            ci(&needs)
        )),
        "{text}"
    );
    let secure = sim["groups"].as_array().unwrap().iter().find(|g| g["group"] == "attachment:secure").unwrap();
    let row = format!("| attachment:secure | 2 | 0.7500 {} n=2 |", ci(&secure["measures"]["recall"]));
    assert!(text.contains(&row), "no `{row}` in:\n{text}");
    // Without a complete counterpart under the same protocol, it says so.
    let alone = dir.path().join("alone.db");
    let only = run(&server.base_url(), &alone, "on");
    let text = String::from_utf8(h2htalk(&["runs", "show", &only, "--db", alone.to_str().unwrap()]).stdout).unwrap();
    assert!(text.contains("### SAP on against SAP off\n\nnot available: no complete run of"), "{text}");
}

//! The figures of a report's assessments, read back from `report.html` and `leaderboard.json`, for
//! tests that check the two show the same numbers.

use std::collections::BTreeMap;

use serde_json::Value;

/// Every `data-fig` cell of the HTML: id → (exact value, displayed text).
pub fn html_figures(html: &str) -> BTreeMap<String, (String, String)> {
    let unescape = |s: &str| {
        s.replace("&#x2f;", "/")
            .replace("&#x27;", "'")
            .replace("&quot;", "\"")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
    };
    let mut out = BTreeMap::new();
    let mut rest = html;
    while let Some(at) = rest.find("data-fig=\"") {
        rest = &rest[at + 10..];
        let id_end = rest.find('"').unwrap();
        let id = unescape(&rest[..id_end]);
        let v_at = rest.find("data-value=\"").unwrap() + 12;
        let v_end = v_at + rest[v_at..].find('"').unwrap();
        let value = rest[v_at..v_end].to_string();
        let t_at = v_end + rest[v_end..].find('>').unwrap() + 1;
        let t_end = t_at + rest[t_at..].find("</td>").unwrap();
        let text = unescape(&rest[t_at..t_end]);
        assert!(out.insert(id.clone(), (value, text)).is_none(), "figure `{id}` is shown twice");
        rest = &rest[t_end..];
    }
    out
}

pub fn find<'a>(list: &'a Value, field: &str, name: &str) -> &'a Value {
    list.as_array().unwrap().iter().find(|x| x[field] == name).unwrap_or_else(|| panic!("no `{name}` in {list}"))
}

/// The figure `id` looked up in leaderboard.json by its own path: (value, lo, hi).
pub fn json_figure(lb: &Value, id: &str) -> (Value, Value, Value) {
    let parts: Vec<&str> = id.split('|').collect();
    let stat = |s: &Value| (s["mean"].clone(), s["lo"].clone(), s["hi"].clone());
    let count = |v: &Value| (v.clone(), Value::Null, Value::Null);
    let prop = |p: &Value| {
        let ci = &p["ci95"];
        (p["rate"].clone(), ci.get(0).cloned().unwrap_or(Value::Null), ci.get(1).cloned().unwrap_or(Value::Null))
    };
    if parts[0].is_empty() {
        // The SAP on − off table: |on|off|judge|key
        let (on, off, judge, key) = (parts[2], parts[3], parts[4], parts[5]);
        let row = lb["assessments"]["sap_safety"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["on"] == on && r["off"] == off && r["judge"] == judge)
            .unwrap();
        let p = &row["paired"];
        return match key {
            "shared" => count(&p["n"]),
            "on" => count(&p["mean_a"]),
            "off" => count(&p["mean_b"]),
            "on_minus_off" => stat(&p["diff"]),
            k => panic!("unknown key {k}"),
        };
    }
    if parts[1] == "tag_simulator" {
        // The simulator findings of the tag section: a contrast (by its group) or a profile group.
        let s = &find(&lb["tags"]["runs"], "run", parts[0])["simulator"];
        let (group, key) = (parts[2], parts[3]);
        if let Some(d) = s["differences"].as_array().unwrap().iter().find(|d| d["group"] == group) {
            return match key {
                "simulations" => count(&d["n"]),
                "difference" => (d["diff"].clone(), d["lo"].clone(), d["hi"].clone()),
                k if d["a"] == k => count(&d["mean_a"]),
                k if d["b"] == k => count(&d["mean_b"]),
                k => panic!("unknown key {k} of {d}"),
            };
        }
        let g = find(&s["groups"], "group", group);
        return if key == "simulations" { count(&g["simulations"]) } else { stat(&g["measures"][key]) };
    }
    let run = find(&lb["assessments"]["runs"], "run", parts[0]);
    let (section, group, key) = (parts[1], parts[2], parts[3]);
    match section {
        "format_checks" => {
            let g = find(&run["format_checks"]["groups"], "group", group);
            let (check, what) = key.split_once('.').unwrap();
            let c = find(&g["checks"], "check", check);
            match what {
                "pass_rate" => stat(&c["rate"]),
                w => count(&c[w]),
            }
        }
        s if s.starts_with("judge:") => {
            let j = find(&run["judge"]["judges"], "judge", &s[6..]);
            let g = find(&j["groups"], "group", group);
            match key {
                "mean" => stat(&g["mean"]),
                k if k.starts_with("criterion.") => stat(&g["criteria"][&k[10..]]),
                k => count(&g[k]),
            }
        }
        s if s.starts_with("safety:") => {
            let j = find(&run["safety"]["judges"], "judge", &s[7..]);
            if group == "needed_judge" {
                // One figure per item that needed a judge: 1 when the JSON lists it.
                let listed = j["needed_judge_items"].as_array().unwrap().iter().any(|i| i == key);
                return count(&Value::from(if listed { 1.0 } else { 0.0 }));
            }
            let g = match group.split_once(':') {
                None => &j["overall"],
                Some(("risk", r)) => find(&j["per_risk"], "group", r),
                Some(("lang", l)) => find(&j["per_lang"], "group", l),
                Some(x) => panic!("unknown group {x:?}"),
            };
            if key == "score" { stat(&g["score"]) } else { count(&g[key]) }
        }
        "simulator" => {
            let s = &run["simulator"];
            match (group, key) {
                ("all", "state_change") => stat(&s["state_change"]),
                ("all", k @ ("recall" | "hidden_need_met" | "changed_need_met")) => prop(&s[k]),
                ("all", k) => count(&s[k]),
                ("recall_by_distance", d) => prop(&s["recall_by_distance"][d]),
                (g, k) => count(&s[g][k]),
            }
        }
        "simulator_trajectory" => {
            let (session, turn) = group[1..].split_once('t').unwrap();
            let t = run["simulator"]["trajectory"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["session"] == session.parse::<u64>().unwrap() && t["turn"] == turn.parse::<u64>().unwrap())
                .unwrap();
            stat(&t["state"])
        }
        "panel" => {
            let (family, criterion) = match group.split_once('/') {
                Some((f, c)) => (f, Some(c)),
                None => (group, None),
            };
            let f = &run["panel"]["families"][family];
            let (mean, agreement, per) = match criterion {
                Some(c) => {
                    let c = &f["criteria"][c];
                    (&c["mean"], &c["agreement"], &c["per_judge"])
                }
                None => (&f["mean"], &f["agreement"], &Value::Null),
            };
            match key {
                "panel_mean" => count(mean),
                "alpha" => count(&agreement["alpha"]),
                "pairable_items" => count(&agreement["pairable_items"]),
                k => count(&per[k.strip_prefix("mean:").unwrap()]),
            }
        }
        s if s.starts_with("judge_validity:") => {
            let j = find(&run["judge_validity"]["judges"], "judge", &s["judge_validity:".len()..]);
            let (family, degradation) = group.split_once('/').unwrap();
            let c = &j["families"][family][degradation];
            match key {
                "share" => {
                    let ci = &c["interval"];
                    (
                        c["share"].clone(),
                        ci.get(0).cloned().unwrap_or(Value::Null),
                        ci.get(1).cloned().unwrap_or(Value::Null),
                    )
                }
                "compared" => count(&c["n"]),
                k => count(&c[k]),
            }
        }
        "baselines" => {
            let g = find(&run["baselines"]["groups"], "group", group);
            match key {
                "run" => stat(&g["run"]),
                "difference" => stat(&g["difference"]["diff"]),
                "detectable" | "normalized" => count(&g[key]),
                k => stat(&g["baselines"][k.strip_prefix("baseline.").unwrap()]),
            }
        }
        "usage" => {
            let u = &run["usage"];
            match (group, key) {
                ("model", "calls") => count(&u["model"]["generations"]),
                ("model", k) => count(&u["model"][k]),
                ("run", "cost_usd") => count(&u["total_cost_usd"]),
                (g, k) => {
                    let (role, model) = g.split_once(':').unwrap();
                    let field = if role == "companion" { "model_in_simulation" } else { role };
                    count(&find(&u[field]["models"], "model", model)[k])
                }
            }
        }
        "memory" => {
            let (mode, kind) = group.split_once(':').unwrap();
            let m = find(&run["memory"]["modes"], "mode", mode);
            let r = find(&m["rows"], "kind", kind);
            match key {
                "correct" | "invented" => prop(&r[key]),
                "fact_recall" | "judge" => stat(&r[key]),
                k => count(&r[k]),
            }
        }
        "reference_sap" => {
            let g = find(&run["reference_sap"]["groups"], "group", group);
            if key == "any" { prop(&g["any"]) } else { count(&g[key]) }
        }
        s => panic!("unknown section {s}"),
    }
}

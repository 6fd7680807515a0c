//! The viewer over a real store, through HTTP: pages, filters, Chinese search, keyset pages forward
//! and back, the item page, side by side, model text kept inert, and bad requests answered with a
//! clear page while the store stays unwritten.

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

use h2htalk_store::Store;
use h2htalk_testkit::browse::make_run;
use h2htalk_view::{ViewOptions, prepare};
use tempfile::TempDir;

fn store(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("runs.db");
    let mut store = Store::open(&db).unwrap();
    make_run(&mut store, "a", 0.0, 6);
    make_run(&mut store, "b", 0.05, 6);
    db
}

async fn start(db: &Path, require_token: bool) -> (String, Option<String>) {
    let options = ViewOptions {
        db: db.to_path_buf(),
        index: None,
        bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
        port: 0,
        require_token,
        annotate: None,
    };
    let server = prepare(&options, |_| {}).await.unwrap();
    let base = format!("http://{}", server.addr);
    let token = server.token.clone();
    tokio::spawn(server.serve());
    (base, token)
}

/// The status and page (the template engine writes `/` in attributes as `&#x2f;`: read back).
async fn get(url: &str) -> (u16, String) {
    let r = reqwest::get(url).await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap().replace("&#x2f;", "/"))
}

fn sha(path: &Path) -> Vec<u8> {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::fs::read(path).unwrap().hash(&mut h);
    h.finish().to_le_bytes().to_vec()
}

#[tokio::test]
async fn browse_search_page_open_and_compare() {
    let dir = TempDir::new().unwrap();
    let db = store(dir.path());
    let before = sha(&db);
    let (base, token) = start(&db, false).await;
    assert!(token.is_none());

    let (status, home) = get(&format!("{base}/")).await;
    assert_eq!(status, 200);
    assert!(home.contains("openai:a") && home.contains("/items?run=a"), "{home}");

    // Filters and a Chinese phrase found inside an answer.
    let (_, items) = get(&format!("{base}/items?run=b")).await;
    assert_eq!(items.matches("class=\"row ").count(), 6);
    let (_, found) = get(&format!("{base}/items?q=%E7%81%AF%E5%A1%94")).await; // 灯塔
    assert_eq!(found.matches("class=\"row ").count(), 2, "{found}");
    assert!(found.contains("/item/a/s4") && found.contains("/item/b/s4"));
    let (_, failed) = get(&format!("{base}/items?status=failed")).await;
    assert_eq!(failed.matches("class=\"row failed\"").count(), 2);

    // Search syntax is text: a quote and FTS operators give a page, not an error.
    let (status, odd) = get(&format!("{base}/items?q=%22%20OR%201%3D1%3B%20--")).await;
    assert_eq!(status, 200);
    assert_eq!(odd.matches("class=\"row ").count(), 2);

    // Pages of 50 are too big for 12 items: no next link; the listing has every row once.
    let (_, all) = get(&format!("{base}/items?sort=rougeL&desc=1")).await;
    assert_eq!(all.matches("class=\"row ").count(), 10);
    assert!(!all.contains("id=\"next\""));

    // The item page: messages, answer, reference, metrics, a link to the side-by-side view.
    let (status, item) = get(&format!("{base}/item/a/s2")).await;
    assert_eq!(status, 200);
    for want in ["第2个问题", "别着急，先深呼吸", "参考答案2", "rougeL", "/side?runs=a%2Cb"] {
        assert!(item.contains(want), "item page lacks {want}");
    }
    let (status, side) = get(&format!("{base}/side?runs=a,b&scenario=s2")).await;
    assert_eq!(status, 200);
    assert_eq!(side.matches("class=\"column\"").count(), 2);
    let (status, diff) = get(&format!("{base}/diff?a=a&b=b&metric=rougeL")).await;
    assert_eq!(status, 200);
    assert!(diff.contains("0.0500"), "{diff}");

    // Model text built to break out of HTML stays text.
    let (_, hostile) = get(&format!("{base}/item/a/s3")).await;
    assert!(!hostile.contains("<img src=x") && !hostile.contains("</script><img"));
    assert!(!hostile.contains("href=\"javascript:") && hostile.contains("&lt;img src=x onerror=alert(1)&gt;"));

    // Bad requests: a clear page with the status, and the server keeps serving.
    let (status, page) = get(&format!("{base}/item/nope/s1")).await;
    assert!(status == 404 && page.contains("no run `nope`"), "{page}");
    let (status, page) = get(&format!("{base}/item/a/nope")).await;
    assert!(status == 404 && page.contains("has no item `nope`"));
    let (status, page) = get(&format!("{base}/items?after=zzz")).await;
    assert!(status == 400 && page.contains("not a page position"));
    let (status, page) = get(&format!("{base}/items?min=abc&metric=rougeL")).await;
    assert!(status == 400 && page.contains("`min` must be a number"));
    let client = reqwest::Client::new();
    let r = client.get(format!("{base}/items")).header("Origin", "http://evil.example").send().await.unwrap();
    assert_eq!(r.status().as_u16(), 403);
    let (status, _) = get(&format!("{base}/")).await;
    assert_eq!(status, 200);

    // Nothing was written to the store.
    assert_eq!(sha(&db), before);
}

#[tokio::test]
async fn a_token_is_asked_for_when_required_and_kept_in_a_cookie() {
    let dir = TempDir::new().unwrap();
    let db = store(dir.path());
    let (base, token) = start(&db, true).await;
    let token = token.expect("a token");
    let (status, page) = get(&format!("{base}/items")).await;
    assert!(status == 401 && page.contains("token"), "{page}");
    let client = reqwest::Client::builder().cookie_store(true).build().unwrap();
    let r = client.get(format!("{base}/?token={token}")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let r = client.get(format!("{base}/items")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200, "the cookie carries the token");
    let (status, _) = get(&format!("{base}/?token=wrong")).await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn a_missing_or_newer_store_is_a_clear_error() {
    let dir = TempDir::new().unwrap();
    let options = |db: &Path| ViewOptions {
        db: db.to_path_buf(),
        index: None,
        bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
        port: 0,
        require_token: false,
        annotate: None,
    };
    let missing = prepare(&options(&dir.path().join("none.db")), |_| {}).await.err().unwrap();
    assert!(missing.to_string().contains("no run store here"), "{missing}");
    let db = dir.path().join("new.db");
    drop(Store::open(&db).unwrap());
    let store = Store::open(&db).unwrap();
    store.corrupt_meta_for_tests("schema_version", &(h2htalk_store::SCHEMA_VERSION + 1).to_string()).unwrap();
    drop(store);
    let newer = prepare(&options(&db), |_| {}).await.err().unwrap();
    assert!(newer.to_string().contains("newer h2htalk"), "{newer}");
}

/// Rating by people: blinded items, the judge's criteria, each rating stored at once with its
/// rater, progress, resume, bad values refused, pairwise choices, other origins refused.
#[tokio::test]
async fn people_rate_a_set_item_by_item_and_resume() {
    use h2htalk_store::{AnnotationItem, AnnotationKind};
    let dir = TempDir::new().unwrap();
    let db = store(dir.path());
    {
        let mut s = Store::open(&db).unwrap();
        let item = |id: &str, sc: &str, b: Option<&str>, swapped| AnnotationItem {
            item: id.into(),
            scenario_id: sc.into(),
            task: "dialogue_base".into(),
            run_a: "a".into(),
            run_b: b.map(str::to_string),
            swapped,
        };
        s.create_annotation_set(
            "s1",
            AnnotationKind::Rubric,
            1,
            &[item("s1-0001", "s0", None, false), item("s1-0002", "s2", None, false)],
        )
        .unwrap();
        s.create_annotation_set("p1", AnnotationKind::Pairwise, 1, &[item("p1-0001", "s4", Some("b"), true)]).unwrap();
    }
    let options = ViewOptions {
        db: db.clone(),
        index: None,
        bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
        port: 0,
        require_token: false,
        annotate: Some("s1".into()),
    };
    let server = prepare(&options, |_| {}).await.unwrap();
    assert!(server.url().ends_with("/annotate/s1"), "{}", server.url());
    let base = format!("http://{}", server.addr);
    tokio::spawn(server.serve());

    let (status, start) = get(&format!("{base}/annotate/s1")).await;
    assert!(status == 200 && start.contains("rater id"), "{start}");
    let (status, page) = get(&format!("{base}/annotate/s1/rate?rater=ann")).await;
    assert_eq!(status, 200);
    assert!(page.contains("s1-0001") && page.contains("ann: 0 of 2 rated") && page.contains("今天的晚霞很好看"));
    assert!(!page.contains("openai:a") && !page.contains("/item/"), "blinded: no model and no link to the item");
    assert!(page.contains("<script src=\"/view.js\"></script>"));
    let r = reqwest::get(format!("{base}/annotate/s1")).await.unwrap();
    assert_eq!(r.headers()["referrer-policy"], "same-origin");
    let criteria: Vec<String> =
        page.split("class=\"score\" id=\"c-").skip(1).map(|rest| rest.split('"').next().unwrap().to_string()).collect();
    assert!(criteria.len() >= 3, "the judge's rubric criteria: {criteria:?}");

    let client = reqwest::Client::new();
    let post = |form: Vec<(String, String)>| {
        let client = client.clone();
        let url = format!("{base}/annotate/s1/rate");
        async move {
            let r = client.post(url).form(&form).send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    let mut form = vec![("rater".to_string(), "ann".to_string()), ("item".into(), "s1-0001".into())];
    let bad: Vec<(String, String)> = form.iter().cloned().chain([(criteria[0].clone(), "11".to_string())]).collect();
    let (status, page) = post(bad).await;
    assert!(status == 400 && page.contains("whole number from 1 to 10"), "{page}");
    form.extend(criteria.iter().map(|c| (c.clone(), "7".to_string())));
    // As a browser posts the form: with its own origin (a `no-referrer` policy would make it `null`).
    let r = client
        .post(format!("{base}/annotate/s1/rate"))
        .header("Origin", base.clone())
        .form(&form)
        .send()
        .await
        .unwrap();
    let (status, next) = (r.status().as_u16(), r.text().await.unwrap().replace("&#x2f;", "/"));
    assert_eq!(status, 200, "redirected to the next item");
    assert!(next.contains("s1-0002") && next.contains("ann: 1 of 2 rated"), "{next}");
    // Resume: the same rater comes back to the item not rated yet; the ratings are in the store.
    let (_, again) = get(&format!("{base}/annotate/s1/rate?rater=ann")).await;
    assert!(again.contains("s1-0002"));
    let stored = Store::open_read_only(&db).unwrap().human_ratings("s1").unwrap();
    assert_eq!(stored.len(), criteria.len());
    assert!(stored.iter().all(|r| r.rater == "ann" && r.item == "s1-0001" && r.value == 7.0));
    let (_, progress) = get(&format!("{base}/annotate/s1")).await;
    assert!(progress.contains(">ann<") && progress.contains(">1<"), "{progress}");

    // Pairwise: the choice is stored as 1 (A), 0 (B) or 0.5 (tie).
    let (_, pair) = get(&format!("{base}/annotate/p1/rate?rater=bo")).await;
    assert!(pair.contains("p1-0001") && pair.contains("name=\"winner\" value=\"tie\""));
    let r = client
        .post(format!("{base}/annotate/p1/rate"))
        .form(&[("rater", "bo"), ("item", "p1-0001"), ("winner", "A")])
        .send()
        .await
        .unwrap();
    assert!(r.text().await.unwrap().contains("rated every item"));
    let stored = Store::open_read_only(&db).unwrap().human_ratings("p1").unwrap();
    assert_eq!((stored.len(), stored[0].criterion.as_str(), stored[0].value), (1, "winner", 1.0));

    // A bad rater id, an unknown set, and a post from another origin are refused.
    let (status, _) = get(&format!("{base}/annotate/s1/rate?rater=%3Cx%3E")).await;
    assert_eq!(status, 400);
    let (status, page) = get(&format!("{base}/annotate/nope")).await;
    assert!(status == 404 && page.contains("annotate export"));
    let r = client
        .post(format!("{base}/annotate/p1/rate"))
        .header("Origin", "http://evil.example")
        .form(&[("rater", "eve"), ("item", "p1-0001"), ("winner", "B")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    assert_eq!(Store::open_read_only(&db).unwrap().human_ratings("p1").unwrap().len(), 1);
}

#[tokio::test]
async fn an_unknown_annotation_set_stops_the_viewer_before_it_listens() {
    let dir = TempDir::new().unwrap();
    let db = store(dir.path());
    let options = ViewOptions {
        db,
        index: None,
        bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
        port: 0,
        require_token: false,
        annotate: Some("missing".into()),
    };
    let e = prepare(&options, |_| {}).await.err().unwrap().to_string();
    assert!(e.contains("no annotation set `missing`") && e.contains("annotate export"), "{e}");
}

/// A run's simulated conversations: listed on the runs page, shown session by session with the
/// reported states, the facts probed and recalled, and the needs' outcome.
#[tokio::test]
async fn simulated_conversations_session_by_session() {
    let dir = TempDir::new().unwrap();
    let db = store(dir.path());
    {
        let mut s = Store::open(&db).unwrap();
        let sim = h2htalk_testkit::simulation(
            0,
            "zh-secure-01",
            h2htalk_store::SimulationOutcome::Completed,
            &[&[2, 3], &[3, 4]],
            &[
                ("fav_food", Some("same_session"), true, Some(true)),
                ("pet_name", Some("three_sessions"), true, Some(false)),
            ],
            Some((true, false)),
        );
        s.put_simulation("a", &sim).unwrap();
    }
    let (base, _) = start(&db, false).await;
    let (_, home) = get(&format!("{base}/")).await;
    assert!(home.contains("/sim/a\">1 simulated"), "{home}");
    let (status, page) = get(&format!("{base}/sim/a")).await;
    assert_eq!(status, 200);
    for want in ["zh-secure-01", "2 → 3 → 3 → 4", "(change +2)", "fav_food", "pet_name", "Session 1", "Session 2"]
    {
        assert!(page.contains(want), "the conversations page lacks {want}");
    }
    assert!(page.contains("<tr><th>hidden need met</th><td>yes</td></tr>"));
    assert!(page.contains("<tr><th>changed need met</th><td>no</td></tr>"));
    let (status, empty) = get(&format!("{base}/sim/b")).await;
    assert!(status == 200 && empty.contains("no simulated conversations"));
    let (status, _) = get(&format!("{base}/sim/nope")).await;
    assert_eq!(status, 404);
}

fn memory_answer(mode: h2htalk_store::MemoryMode, probe: &str, reply: Option<&str>) -> h2htalk_store::MemoryAnswer {
    use h2htalk_data::suite::memory::ProbeType;
    let abstention = probe.ends_with("-5");
    h2htalk_store::MemoryAnswer {
        mode,
        probe_id: probe.into(),
        user_id: "mem-en-001".into(),
        kind: if abstention { ProbeType::Abstention } else { ProbeType::SingleSession },
        lang: h2htalk_data::suite::Lang::En,
        reply: reply.map(str::to_string),
        error: reply.is_none().then(|| "timeout after 3 tries".to_string()),
        facts_held: usize::from(reply.is_some_and(|r| r.contains("Okonkwo"))),
        facts_total: usize::from(!abstention),
        stale_held: 0,
        abstained: false,
        invented: reply.map(|_| abstention),
        invented_by: (abstention && reply.is_some()).then_some(h2htalk_store::InventedBy::Rule),
        judge: Some("openai:judge".into()),
        judge_score: reply.map(|_| 7.0),
        judge_invented_fact: None,
        judge_reason: reply.map(|_| "named the surgeon".to_string()),
        judge_failure: None,
        input_tokens: Some(900),
        output_tokens: Some(20),
        latency_ms: 12.0,
        created_at: "2026-12-05T09:00:00Z".into(),
    }
}

#[tokio::test]
async fn memory_suite_replies_probe_by_probe_with_the_suites_message_and_gold() {
    use h2htalk_store::MemoryMode::{Given, Own};
    let dir = TempDir::new().unwrap();
    let db = store(dir.path());
    {
        let mut s = Store::open(&db).unwrap();
        s.put_memory_answer("a", &memory_answer(Given, "mem-en-001-1", Some("Dr. Okonkwo, I think."))).unwrap();
        s.put_memory_answer("a", &memory_answer(Given, "mem-en-001-5", Some("<script>alert(1)</script>"))).unwrap();
        s.put_memory_answer("a", &memory_answer(Own, "mem-en-001-1", None)).unwrap();
        let note = h2htalk_store::MemoryNote {
            user_id: "mem-en-001".into(),
            session: 1,
            answer: Some("[{\"content\": \"mother's knee surgery\"}]".into()),
            memories: 1,
            format_error: None,
            error: None,
        };
        s.put_memory_note("a", &note).unwrap();
    }
    let (base, _) = start(&db, false).await;
    let (_, home) = get(&format!("{base}/")).await;
    assert!(home.contains("/memory/a\">3 replies"), "{home}");
    assert!(!home.contains("/memory/b\""), "run b answered no probe");

    let (status, page) = get(&format!("{base}/memory/a")).await;
    assert_eq!(status, 200);
    for want in [
        "3 of 3 replies shown",
        // The probe's message, gold reply and key fact, read from the run's suite.
        "guy who did her knee",
        "Her surgeon was Dr. Okonkwo",
        "<li>Okonkwo</li>",
        "Dr. Okonkwo, I think.",
        "<tr><th>key facts held</th><td>1 of 1</td></tr>",
        "<tr><th>by the rules</th><td>correct</td></tr>",
        "named the surgeon",
        // The abstention probe answered: wrong by the rules, invented by the rules.
        "yes (by the rule)",
        // The failed call, with its reason.
        "timeout after 3 tries",
        // The own mode's note.
        "mother&#x27;s knee surgery",
        // The test spec's fingerprint is not the suite's: said.
        "has changed since this run",
    ] {
        assert!(page.contains(want), "the memory page lacks {want}");
    }
    assert!(!page.contains("<script>alert"), "model text stays inert");
    assert!(
        page.contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;")
            || page.contains("&lt;script&gt;alert(1)&lt;/script&gt;")
    );

    let (_, own) = get(&format!("{base}/memory/a?mode=own")).await;
    assert!(own.contains("1 of 3 replies shown") && own.contains("timeout after 3 tries"), "{own}");
    assert!(!own.contains("Dr. Okonkwo, I think."));
    let (_, abst) = get(&format!("{base}/memory/a?kind=abstention")).await;
    assert!(abst.contains("1 of 3 replies shown"), "{abst}");

    let (status, empty) = get(&format!("{base}/memory/b")).await;
    assert!(status == 200 && empty.contains("no replies to the memory suite"));
    let (status, _) = get(&format!("{base}/memory/nope")).await;
    assert_eq!(status, 404);
}

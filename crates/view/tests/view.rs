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

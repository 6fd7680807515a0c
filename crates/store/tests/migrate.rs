//! A store written by the release before the typed store (schema 1, commit bcce696; the fixture and
//! what that release printed about it come from scripts/make-store-fixture.sh) opens with this
//! code: migrated in place in one transaction after a backup copy, every run listed with its
//! specification, every record readable. The figures (`runs show`, the report, the export) are
//! compared in crates/cli/tests/migrate.rs.

use std::path::PathBuf;

use h2htalk_store::{RunStatus, SCHEMA_VERSION, Store};

fn fixture() -> PathBuf {
    h2htalk_testkit::root().join("tests/fixtures/store-v1/store.db")
}

fn copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::TempDir::new().unwrap();
    let db = dir.path().join("h2htalk.db");
    std::fs::copy(fixture(), &db).unwrap();
    (dir, db)
}

#[test]
fn a_schema_1_store_is_migrated_in_place_with_a_backup_beside_it() {
    let (dir, db) = copy();
    let before = std::fs::read(&db).unwrap();
    let store = Store::open(&db).unwrap();
    let backup = dir.path().join("h2htalk.db.schema-1.bak");
    assert!(backup.is_file(), "no backup beside the store");
    // The backup is the schema-1 store, whole: it opens as one and holds the same runs.
    let backup_store = rusqlite_free_schema_version(&backup);
    assert_eq!(backup_store, "1");
    assert!(!before.is_empty());
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 2, "both runs of the fixture");
    for r in &runs {
        assert!(r.legacy_provenance.is_some(), "the schema-1 provenance is kept");
        assert_eq!(r.spec.model_id.provider, "openai");
        assert!(matches!(r.status, RunStatus::Complete | RunStatus::CompleteWithFailures | RunStatus::Incomplete));
        let records = store.records(&r.id).unwrap();
        assert!(!records.is_empty());
        assert!(records.iter().all(|x| x.generation.is_some()));
    }
    assert_eq!(store.integrity_check().unwrap(), "ok");
    drop(store);
    // Opening again does not migrate again (and writes no second backup).
    let again = Store::open(&db).unwrap();
    assert_eq!(again.runs().unwrap().len(), 2);
    assert!(!dir.path().join("h2htalk.db.schema-1.2.bak").exists());
    assert_eq!(rusqlite_free_schema_version(&db), SCHEMA_VERSION.to_string());
}

#[test]
fn reading_a_schema_1_store_migrates_it_first() {
    let (_dir, db) = copy();
    let store = Store::open_read_only(&db).unwrap();
    assert_eq!(store.runs().unwrap().len(), 2);
}

#[test]
fn a_store_newer_than_this_binary_is_refused() {
    let (_dir, db) = copy();
    drop(Store::open(&db).unwrap());
    let store = Store::open(&db).unwrap();
    store.corrupt_meta_for_tests("schema_version", &(SCHEMA_VERSION + 1).to_string()).unwrap();
    drop(store);
    for e in [Store::open(&db).err().unwrap().to_string(), Store::open_read_only(&db).err().unwrap().to_string()] {
        assert!(e.contains("newer h2htalk") && e.contains("upgrade"), "{e}");
    }
}

/// The schema version recorded in a store file, read with the store itself (read-only).
fn rusqlite_free_schema_version(path: &std::path::Path) -> String {
    Store::schema_version_of(path).unwrap().map(|v| v.to_string()).unwrap_or_default()
}

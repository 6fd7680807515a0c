#!/usr/bin/env bash
# Writes the schema-1 store fixture of crates/store/tests/migrate.rs: a small run store made by the
# h2htalk release before the typed store (commit bcce696, schema 1), and what that release printed
# about it (runs list, runs show --json, report, export), which the migrated store must reproduce.
#
#   scripts/make-store-fixture.sh OLD_CHECKOUT OUT_DIR
#
# OLD_CHECKOUT is a checkout of bcce696 (git worktree add --detach DIR bcce696) beside shared/;
# OUT_DIR receives store.db and expected/. Needs cargo; runs the old binary against two in-suite
# test servers (the model under test and a scripted judge) on 127.0.0.1.
set -euo pipefail
OLD=$(cd "$1" && pwd)
OUT=$(mkdir -p "$2" && cd "$2" && pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/h2htalk/target}"
(cd "$OLD" && cargo build -q -p h2htalk -p h2htalk-testserver)
BIN="$CARGO_TARGET_DIR/debug"
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

# A small suite: ours, with the safety set cut to its first two scenarios per language.
cp -r "$OLD/suites" "$WORK/suite"
for f in "$WORK"/suite/safety/*.jsonl; do head -n 2 "$f" > "$f.tmp" && mv "$f.tmp" "$f"; done

start() { # CONFIG_JSON -> prints the base URL
    "$BIN/h2htalk-testserver" 0 "$1" > "$WORK/url.$$" &
    for _ in $(seq 50); do [ -s "$WORK/url.$$" ] && break; sleep 0.1; done
    head -n 1 "$WORK/url.$$"; rm "$WORK/url.$$"
}
COMPANION=$(start '{}')
RUBRIC='{"scores": {"empathy": 8, "fit_to_state": 7, "persona_consistency": 9, "naturalness": 6}, "reason": "warm"}'
JUDGE=$(start "$(python3 -c 'import json,sys; print(json.dumps({"script": [["\"persona_consistency\": <1-10>", sys.argv[1]]]}))' "$RUBRIC")")
FAULTY=$(start '{"seed": 3, "faults": {"server_error": 0.3, "content_filter": 0.2, "empty": 0.1, "hang_ms": 100, "retry_after_s": 0}}')

DB="$OUT/store.db"
rm -f "$DB" "$DB-wal" "$DB-shm"
run() { "$BIN/h2htalk" run --suite "$WORK/suite" --db "$DB" --metrics lexical --json --quiet "$@"; }
# 1: SAP on, three sub-tasks, the safety set, the judge and one simulated conversation.
run --model openai:test --base-url "$COMPANION" --tasks dialogue_base,itinerary_middle,recollection_synthesize \
    --limit 2 --safety --judge openai:judge --judge-base-url "$JUDGE" --judge-seed 7 --simulate 1 > "$WORK/r1.json"
# 2: the same model, SAP off, under faults (failed items with their reasons), paper profile.
run --model openai:test --base-url "$FAULTY" --tasks dialogue_base,recollection_refine --limit 3 --sap off \
    --profile paper > "$WORK/r2.json" || true

mkdir -p "$OUT/expected"
"$BIN/h2htalk" runs list --db "$DB" > "$OUT/expected/runs-list.txt"
for id in $(python3 -c 'import json,sys; [print(json.load(open(f))["run_id"]) for f in sys.argv[1:]]' "$WORK"/r1.json "$WORK"/r2.json); do
    "$BIN/h2htalk" runs show "$id" --db "$DB" --json > "$OUT/expected/show-$id.json"
    "$BIN/h2htalk" runs export "$id" --db "$DB" --out "$OUT/expected/export-$id" > /dev/null
done
"$BIN/h2htalk" report --db "$DB" --out "$OUT/expected/report" > /dev/null
rm -f "$OUT/expected/report/report.html"
echo "wrote $DB ($(stat -c %s "$DB") bytes) and $OUT/expected"

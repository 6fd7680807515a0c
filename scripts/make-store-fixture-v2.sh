#!/usr/bin/env bash
# Writes the schema-2 store fixture (tests/fixtures/store-v2): a run store made by the last h2htalk
# release that wrote schema 2 (commit 66f280d), holding every kind of row that release wrote — a
# sweep of three models, a panel of two judges, the judge validity check, the SAP safety set,
# completed simulated conversations, pairwise judgments and helper-call usage — and what that release
# printed about it (runs list, runs show --json, export, report JSON/CSV/Markdown), which the
# migrated store must reproduce.
#
#   scripts/make-store-fixture-v2.sh OLD_BIN_DIR OLD_SUITE_DIR OUT_DIR
#
# OLD_BIN_DIR holds that release's `h2htalk` and `h2htalk-testserver` (a debug build of a worktree
# of 66f280d); OLD_SUITE_DIR is its suites/ folder. Runs everything against in-suite test servers on
# 127.0.0.1.
set -euo pipefail
BIN=$(cd "$1" && pwd)
OLD_SUITE=$(cd "$2" && pwd)
OUT=$(mkdir -p "$3" && cd "$3" && pwd)
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

# A small suite: ours, cut to the scenarios the runs use (two of each of three sub-tasks, two of
# the safety set per language) and four simulator profiles. The runs name it by a relative path
# (`suite`, from $WORK), and it goes into the fixture, so that a test reads the runs' suite (their
# tags) from a copy.
mkdir -p "$WORK/suite"
for part in scenarios safety personas templates sap simulator judge rules; do cp -r "$OLD_SUITE/$part" "$WORK/suite/"; done
for f in "$WORK"/suite/safety/*.jsonl; do head -n 2 "$f" > "$f.tmp" && mv "$f.tmp" "$f"; done
for f in "$WORK"/suite/scenarios/*.jsonl; do
    case "$(basename "$f")" in
        dialogue_base.jsonl|itinerary_middle.jsonl|recollection_synthesize.jsonl) head -n 2 "$f" > "$f.tmp" && mv "$f.tmp" "$f" ;;
        *) rm "$f" ;;
    esac
done
(cd "$WORK/suite/simulator" && ls zh-*.json | sed -n '5,$p' | xargs rm && ls en-*.json README.md | xargs rm)
cd "$WORK"

start() { # VAR CONFIG_JSON: starts a server (a job of this shell, killed on exit), its base URL in VAR
    local f="$WORK/url.$1"
    "$BIN/h2htalk-testserver" 0 "$2" > "$f" 2>/dev/null &
    for _ in $(seq 100); do [ -s "$f" ] && break; sleep 0.1; done
    printf -v "$1" '%s' "$(head -n 1 "$f")"
}
companion() { # SEED ANSWER FAULT_RATE
    python3 -c 'import json,sys; print(json.dumps({"seed": int(sys.argv[1]), "faults": {"server_error": float(sys.argv[3]), "retry_after_s": 0}, "script": [["", sys.argv[2]]]}))' "$@"
}
judge() { # DIALOGUE_SCORE
    python3 - "$1" <<'EOF'
import json, sys
s = int(sys.argv[1])
rubric = lambda names: json.dumps({"scores": {n: min(10, s + i) for i, n in enumerate(names)}, "reason": "steady"})
script = [
    ["\"persona_consistency\": <1-10>", rubric(["empathy", "fit_to_state", "persona_consistency", "naturalness"])],
    ["\"no_invention\": <1-10>", rubric(["faithfulness", "completeness", "no_invention"])],
    ["\"constraint_following\": <1-10>", rubric(["feasibility", "consistency", "constraint_following"])],
    ["hidden_need_met", json.dumps({"hidden_need_met": s % 2 == 0, "changed_need_met": True, "reason": "partly"})],
]
for sess in range(1, 5):
    for turn in range(1, 5):
        msg = f"第{sess}次第{turn}轮：今天还行吧，就是有点累。"
        script.append([f"[s{sess}t{turn}]", json.dumps({"state": min(10, 3 + sess + turn % 2), "message": msg}, ensure_ascii=False)])
print(json.dumps({"script": script}, ensure_ascii=False))
EOF
}
start A "$(companion 1 '（点头）我在呢，慢慢说。' 0)"
start B "$(companion 2 '嗯，听起来你今天很累，先歇一会儿吧。' 0.15)"
start C "$(companion 3 '好的。' 0)"
start J1 "$(judge 6)"
start J2 "$(judge 7)"

cat > "$WORK/h2htalk.toml" <<EOF
[[model]]
name = "alpha"
base_url = "$A"
max_attempts = 8
price_input_per_million = 1.0
price_output_per_million = 2.0

[[model]]
name = "beta"
base_url = "$B"
max_attempts = 8

[[model]]
name = "gamma"
base_url = "$C"
max_attempts = 8
price_input_per_million = 0.5
price_output_per_million = 1.5
EOF

DB="$OUT/store.db"
rm -f "$DB" "$DB-wal" "$DB-shm"
"$BIN/h2htalk" sweep --name fixture --config "$WORK/h2htalk.toml" --db "$DB" --suite suite \
    --model alpha --model beta --model gamma \
    --tasks dialogue_base,itinerary_middle,recollection_synthesize --limit 2 --metrics lexical --safety \
    --judge openai:judge-one --judge-base-url "$J1" --judge openai:judge-two --judge-base-url "$J2" --judge-seed 7 \
    --judge-validity --judge-validity-limit 2 --simulate 3 --json --quiet > "$WORK/sweep.json"
# The same first model with SAP off (the SAP on/off pair), under the paper profile.
"$BIN/h2htalk" run --config "$WORK/h2htalk.toml" --db "$DB" --suite suite --model alpha --sap off \
    --tasks dialogue_base,itinerary_middle,recollection_synthesize --limit 2 --metrics lexical --safety \
    --profile paper --json --quiet > "$WORK/off.json"
# Pairwise judgments of the sweep's runs (the judge's answers cannot be parsed: counted as such).
"$BIN/h2htalk" compare --sweep fixture --db "$DB" --judge openai:judge-one --judge-base-url "$J1" --format json \
    > "$WORK/compare.json" || true

mkdir -p "$OUT/expected"
"$BIN/h2htalk" runs list --db "$DB" > "$OUT/expected/runs-list.txt"
for id in $(sqlite3 "$DB" 'SELECT id FROM runs ORDER BY id' 2>/dev/null || python3 -c 'import sqlite3,sys; [print(r[0]) for r in sqlite3.connect(sys.argv[1]).execute("SELECT id FROM runs ORDER BY id")]' "$DB"); do
    "$BIN/h2htalk" runs show "$id" --db "$DB" --json > "$OUT/expected/show-$id.json"
    "$BIN/h2htalk" runs export "$id" --db "$DB" --out "$OUT/expected/export-$id" > /dev/null
done
"$BIN/h2htalk" report --db "$DB" --sweep fixture --out "$OUT/expected/report-sweep" > /dev/null
"$BIN/h2htalk" report --db "$DB" --allow-mixed --out "$OUT/expected/report-all" > /dev/null
rm -f "$OUT"/expected/report-*/report.html
rm -rf "$OUT/reports" "$OUT/suite"
cp -r "$WORK/suite" "$OUT/suite"
# Checkpoint the WAL into the file, so that the fixture is one file.
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("PRAGMA wal_checkpoint(TRUNCATE)"); c.execute("PRAGMA journal_mode=DELETE"); c.close()' "$DB"
echo "wrote $DB ($(stat -c %s "$DB") bytes) and $OUT/expected"

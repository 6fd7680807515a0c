#!/usr/bin/env bash
# Benchmark: sweeps of 1, 10 and 50 models over the official set with every metric (m3e-small),
# against the in-suite test server (each model answers differently, at a real answer's length),
# with the release binary, and optionally side by side with an earlier binary ($BEFORE) measured
# in the same run. Prints per sweep: wall time, scoring pairs/s (pairs / wall time: the server
# answers at once, so scoring is most of it), peak RSS, report size and three times of headless
# Chromium on the report: `--screenshot` (start, load, layout, paint and the PNG: the render),
# `--dump-dom` (start, load, then the whole DOM written back out as text) and the page's own
# first painted frame (scripts/page_load.py, without Chromium's start); then the ratios to the
# targets of issue 28 (peak RSS <= 1.5 GB and within 1.3x of the one-model sweep; pairs/s >= 2x
# the earlier binary; report <= 25 MB, rendered in < 3 s).
#
#   scripts/bench-sweep.sh [REFERENCES_DIR]
#   env: COUNTS="1 10 50"  LIMIT=  (scenarios per sub-task; empty: the whole official set)
#        BEFORE=PATH (an earlier h2htalk binary)  BEFORE_SUITE=DIR (the official suite as that
#        binary reads it, when its judge files predate fields added since)
#        ANSWER_CHARS=120  KEEP=DIR (keep the stores)
#        JUDGE=1 (every answer judged too: `--judge openai:judge` on the same server, which answers
#        the three rubrics with fixed scores)  BIN_DIR=DIR (use h2htalk and h2htalk-testserver from
#        DIR instead of building the release)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
refs=$(cd "${1:-$root/../shared/h2htalk-data}" && pwd)
counts=${COUNTS:-1 10 50}
limit=${LIMIT:-}
answer_chars=${ANSWER_CHARS:-120}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/h2htalk/target}
if [ -n "${BIN_DIR:-}" ]; then
  bins=$BIN_DIR
else
  cargo build --release --locked -q -p h2htalk -p h2htalk-testserver --manifest-path "$root/Cargo.toml"
  bins=$CARGO_TARGET_DIR/release
fi
bin=$bins/h2htalk
work=${KEEP:-$(mktemp -d)}
mkdir -p "$work"
server_pid=
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$work"; }
trap cleanup EXIT
seconds() { # COMMAND...: prints how many seconds it ran (its output dropped)
  local t0 t1
  t0=$(date +%s.%N)
  "$@" > /dev/null 2>&1 || true
  t1=$(date +%s.%N)
  python3 -c "print(round($t1 - $t0, 2))"
}

# With JUDGE=1 the server answers each family's rubric (found by its criteria in the judge's prompt).
rubric() { printf '["\\"%s\\": <1-10>", "{\\"scores\\": {%s}, \\"reason\\": \\"fixed\\"}"]' "$1" "$2"; }
script=
if [ "${JUDGE:-}" = 1 ]; then
  script=", \"script\": [$(rubric persona_consistency '\"empathy\": 7, \"fit_to_state\": 6, \"persona_consistency\": 8, \"naturalness\": 7'), \
$(rubric no_invention '\"faithfulness\": 7, \"completeness\": 6, \"no_invention\": 8'), \
$(rubric constraint_following '\"feasibility\": 7, \"consistency\": 6, \"constraint_following\": 8')]"
fi
"$bins/h2htalk-testserver" 0 "{\"answer_chars\": $answer_chars$script}" > "$work/server.out" &
server_pid=$!
for _ in $(seq 50); do [ -s "$work/server.out" ] && break; sleep 0.1; done
url=$(head -1 "$work/server.out")
chromium=$(command -v chromium || command -v chromium-browser || true)

echo "bench-sweep: $(cd "$root" && git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores, \
load $(cut -d' ' -f1-3 /proc/loadavg), limit ${limit:-none}, answers >= $answer_chars chars, judge ${JUDGE:-0}"
printf '%-8s %6s %10s %10s %10s %10s %10s %10s %10s\n' binary models wall_s pairs/s peak_MB report_MB shot_s dump_s painted_s
results=$work/results.tsv
: > "$results"
one() { # LABEL BINARY N [SUITE]
  local label=$1 b=$2 n=$3 suite=${4:-$root/suites/official} dir=$work/$1-$3
  rm -rf "$dir" && mkdir -p "$dir"
  local args=(sweep --name bench --suite "$suite" --references "$refs" --base-url "$url"
    --metrics all --profile paper --db "$dir/runs.db" --json --quiet)
  [ -n "$limit" ] && args+=(--limit "$limit")
  [ "${JUDGE:-}" = 1 ] && args+=(--judge openai:judge)
  for i in $(seq "$n"); do args+=(--model "openai:model-$i"); done
  /usr/bin/time -f "%e %M" -o "$dir/time" "$b" "${args[@]}" > "$dir/out.json" 2> "$dir/err" \
    || { echo "$label $n failed:"; tail -20 "$dir/err"; exit 1; }
  read -r secs kib < "$dir/time"
  local items html bytes shot=nan dump=nan painted=nan
  items=$(python3 -c 'import json,sys,sqlite3
o=json.load(open(sys.argv[1])); db=sqlite3.connect(sys.argv[2])
print(sum(db.execute("select count(*) from scores where run_id=?",(m["run_id"],)).fetchone()[0] for m in o["members"]))' \
    "$dir/out.json" "$dir/runs.db")
  html=$dir/reports/sweep-bench/report.html
  bytes=$(stat -c %s "$html")
  if [ -n "$chromium" ]; then
    local chrome=("$chromium" --headless --disable-gpu --no-sandbox --user-data-dir="$dir/chrome")
    shot=$(seconds timeout 300 "${chrome[@]}" --window-size=1280,900 --screenshot="$dir/shot.png" "file://$html")
    dump=$(seconds timeout 300 "${chrome[@]}" --virtual-time-budget=1 --dump-dom "file://$html")
  fi
  # The page's own measure (Navigation Timing): from the navigation's start until the first frame
  # painted after the viewer's script is ready, without Chromium's start-up.
  local venv=${H2HTALK_BROWSER_VENV:-$HOME/.cache/h2htalk/browser-venv}
  if [ -n "$chromium" ] && "$venv/bin/python" -c "import websockets" 2>/dev/null; then
    painted=$("$venv/bin/python" "$root/scripts/page_load.py" "$html" | cut -d' ' -f3)
  fi
  python3 - "$label" "$n" "$secs" "$kib" "$items" "$bytes" "$shot" "$dump" "$painted" >> "$results" <<'PY'
import sys
label, n, secs, kib, items, size, shot, dump, painted = sys.argv[1:]
print("\t".join([label, n, secs, str(int(items) / float(secs)), str(int(kib) / 1024), str(int(size) / 1e6), shot, dump, painted]))
PY
  tail -1 "$results" | awk -F'\t' '{printf "%-8s %6s %10.1f %10.1f %10.0f %10.1f %10s %10s %10s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9}'
}
for n in $counts; do
  [ -n "${BEFORE:-}" ] && one before "$BEFORE" "$n" "${BEFORE_SUITE:-}"
  one now "$bin" "$n"
done
python3 - "$results" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
by = {(r[0], int(r[1])): r for r in rows}
now = sorted(n for (b, n) in by if b == "now")
if not now:
    sys.exit()
base = by[("now", now[0])]
print(f"\ntargets (issue 28), against the {now[0]}-model sweep of this binary:")
for n in now:
    r = by[("now", n)]
    rss, one_rss = float(r[4]), float(base[4])
    line = f"  {n:>3} models: peak {rss:.0f} MB = {rss / 1536:.2f}x the 1.5 GB bound, {rss / one_rss:.2f}x the {now[0]}-model sweep (target <= 1.3x)"
    line += f"; report {float(r[5]):.1f} MB = {float(r[5]) / 25:.2f}x the 25 MB bound"
    if r[6] != "nan":
        line += f", rendered in {r[6]} s by --screenshot with Chromium's start (target < 3 s)"
    if r[8] != "nan":
        line += f", first frame painted at {r[8]} s by the page's own timing"
    if r[7] != "nan":
        line += f"; --dump-dom {r[7]} s (the DOM written back out as text too)"
    if ("before", n) in by:
        b = by[("before", n)]
        line += f"; pairs/s {float(r[3]) / float(b[3]):.2f}x the earlier binary (target >= 2x), peak {rss / float(b[4]):.2f}x its"
    print(line)
PY

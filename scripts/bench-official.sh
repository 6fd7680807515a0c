#!/usr/bin/env bash
# Benchmark: the whole official set (4,589 items) run against the in-suite test server and scored
# with every metric, phase by phase, with the release binary:
#   1. `h2htalk run --metrics lexical`: generation (the test server answers at once, so this is
#      h2htalk's own overhead: planning, rendering 4,589 prompts, the scheduler, the store), lexical
#      scoring and the report;
#   2. `h2htalk score --metrics lexical` on the run's export: the lexical scoring of 4,589 pairs alone;
#   3. `h2htalk score --metrics neural` on the same export: BERTScore and embedding similarity (m3e-small);
#   4. `h2htalk report` of the run alone.
# Prints each phase's wall time and peak memory, and the generation overhead per item.
#   scripts/bench-official.sh [REFERENCES_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
refs=$(cd "${1:-$root/../shared/h2htalk-data}" && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/h2htalk/target}
cargo build --release --locked -q --workspace --manifest-path "$root/Cargo.toml"
bin=$CARGO_TARGET_DIR/release/h2htalk
work=$(mktemp -d)
server_pid=
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

"$CARGO_TARGET_DIR/release/h2htalk-testserver" 0 > "$work/server.out" &
server_pid=$!
for _ in $(seq 50); do [ -s "$work/server.out" ] && break; sleep 0.1; done
url=$(head -1 "$work/server.out")

phase() { # NAME COMMAND...: runs it, prints "NAME  seconds  peak MiB"
  local name=$1; shift
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" > "$work/$name.out" 2> "$work/$name.err" \
    || { echo "$name failed:"; cat "$work/$name.err"; exit 1; }
  read -r secs kib < "$work/time"
  printf '%-34s %8.2f s  %6d MiB\n' "$name" "$secs" "$((kib / 1024))"
  echo "$secs" > "$work/$name.secs"
}

echo "official set: $(cd "$root" && git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
phase "run (generate+lexical+report)" "$bin" run --suite "$root/suites/official" --references "$refs" \
  --model openai:bench --base-url "$url" --metrics lexical --profile paper --db "$work/runs.db" --json --quiet
run_id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$work/run (generate+lexical+report).out")
"$bin" runs export "$run_id" --db "$work/runs.db" --out "$work/export" > /dev/null
phase "score --metrics lexical (4,589)" "$bin" score --references "$refs" --predictions "$work/export/predictions" \
  --profile paper --metrics lexical --format json
phase "score --metrics neural (4,589)" "$bin" score --references "$refs" --predictions "$work/export/predictions" \
  --profile paper --metrics neural --format json
phase "report (one run)" "$bin" report --db "$work/runs.db" --runs "$run_id" --out "$work/report"
python3 - "$work" <<'PY'
import sys, pathlib
w = pathlib.Path(sys.argv[1])
t = lambda n: float((w / f"{n}.secs").read_text())
run, lex, rep = t("run (generate+lexical+report)"), t("score --metrics lexical (4,589)"), t("report (one run)")
gen = run - lex - rep
print(f"generation overhead (run - lexical - report): {gen:.2f} s, {gen / 4589 * 1000:.2f} ms per item")
PY

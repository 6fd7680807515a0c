#!/usr/bin/env bash
# Plants, one at a time, a defect each strengthened test exists to catch, runs that test, and
# checks that it fails; the source is restored after each (also on Ctrl-C). A test that still
# passes with its defect planted is reported and the script exits 1.
#
#   scripts/mutation-check.sh            (all four; about 10 minutes on 2 cores, debug builds)
#   scripts/mutation-check.sh kill csv   (some of them: kill, count, csv, rounding)
#
# The defects:
#   kill      the killed-run test times its kills from spawn again, with no wait for the resumed
#             process's first commit (a sleep too short: a kill lands before any work);
#   count     the runner asks the first item of each sub-task again on every resume (a wrong count
#             that the old `requests - b <= 22` bound let through);
#   csv       the report writes the e-mail addresses of the stored answers into leaderboard.csv
#             without redaction;
#   rounding  the engine rounds quantised activations toward zero instead of to nearest (off by one
#             rounding step), on the AVX2 and the portable path alike.
# The engine's defect needs the embedded Gemma model (scripts/fetch-models.sh gemma3-270m).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/h2htalk/target}
saved=$(mktemp -d)
# Every planted file is saved as $saved/N with its path in $saved/N.path.
restore() {
  local p
  for p in "$saved"/*.path; do
    [ -f "$p" ] || continue
    cp "${p%.path}" "$(cat "$p")"
    rm -f "$p"
  done
}
trap 'restore; rm -rf "$saved"' EXIT INT TERM

# plant FILE PYTHON-REPLACEMENTS...: OLD and NEW strings in pairs; each OLD must occur.
plant() {
  local file=$1
  shift
  local n
  n=$(ls "$saved" | wc -l)
  cp "$file" "$saved/$n"
  echo "$file" >"$saved/$n.path"
  python3 - "$file" "$@" <<'EOF'
import sys
path, pairs = sys.argv[1], sys.argv[2:]
text = open(path, encoding="utf-8").read()
for old, new in zip(pairs[::2], pairs[1::2]):
    if old not in text:
        sys.exit(f"mutation-check: `{old}` is not in {path}: the script is out of date")
    text = text.replace(old, new)
open(path, "w", encoding="utf-8").write(text)
EOF
}

failed=0
# expect NAME TEST-ARGS...: the test must fail; prints its first failure line.
expect_failure() {
  local name=$1
  shift
  local log="$saved/$name.log"
  if cargo test --locked -q "$@" >"$log" 2>&1; then
    echo "mutation $name: NOT CAUGHT by cargo test $*" >&2
    failed=1
  else
    local why
    why=$(grep -m1 -E "panicked at|error\[|^error:" "$log" || true)
    local line
    line=$(grep -m1 -A2 "panicked at" "$log" | sed -n 2p || true)
    echo "mutation $name: caught by cargo test $* -- $why ${line:0:200}"
  fi
  restore
}

all=(kill count csv rounding)
for m in "${@:-${all[@]}}"; do
  case "$m" in
    kill)
      plant crates/cli/tests/run.rs \
        'while run_id().is_none_or(|id| committed(&id) <= before) {' \
        'while false && run_id().is_none_or(|id| committed(&id) <= before) {'
      expect_failure kill -p h2htalk --test run a_killed_run_resumes
      ;;
    count)
      plant crates/runner/src/generate.rs \
        'Some(g) => retry_failed && g.status == GenerationStatus::Failed,' \
        'Some(g) => (retry_failed && g.status == GenerationStatus::Failed) || (!retry_failed && g.scenario_id.ends_with("-001")),'
      expect_failure count -p h2htalk --test sweep a_crashed_sweep
      ;;
    csv)
      plant crates/report/src/lib.rs \
        '    let csv = render::to_csv(&lb)?;' \
        '    let mut csv = render::to_csv(&lb)?;
    for r in load_runs(store, &db, run_ids)? {
        for a in r.items.iter().filter_map(|i| i.answer.as_deref()) {
            for w in a.split(|c: char| c.is_whitespace() || "，。".contains(c)).filter(|w| w.contains("@")) {
                csv.push_str(&format!("# contact,{w}\n"));
            }
        }
    }'
      expect_failure csv -p h2htalk --test run redact_masks
      ;;
    rounding)
      plant crates/local/src/quant/mod.rs '(v * id).round_ties_even()' '(v * id).trunc()'
      plant crates/local/src/quant/simd.rs '_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC' '_MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC'
      expect_failure rounding -p h2htalk-local --test llama_golden
      ;;
    *) echo "mutation-check: unknown mutation '$m' (kill, count, csv, rounding)" >&2; exit 2 ;;
  esac
done
exit $failed

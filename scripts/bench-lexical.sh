#!/usr/bin/env bash
# Benchmark: whole-process `h2htalk score --metrics lexical` against a Python program doing the
# official lexical scoring (jieba, nltk BLEU x4, the custom ROUGE x3), on the same 4,589 official
# pairs (prediction for line i = reference of line i+1), in one run on one machine.
# Prints the median wall time of each over RUNS runs, the ratio, and both peak memories.
#   scripts/bench-lexical.sh [REFERENCES_DIR]    (RUNS=5 by default)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
refs=$(cd "${1:-$root/../shared/h2htalk-data}" && pwd)
runs=${RUNS:-5}
venv=${H2HTALK_GOLDEN_VENV:-$root/.venv/golden}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/h2htalk/target}

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q jieba==0.42.1 nltk==3.10.4
# --workspace, as the README and CI build: a -p subset resolves other features and rebuilds candle.
cargo build --release --locked -q --workspace --bin h2htalk --manifest-path "$root/Cargo.toml"
bin=$CARGO_TARGET_DIR/release/h2htalk

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$venv/bin/python" - "$refs" "$work/preds" <<'PY'
import json, os, sys
src, out = sys.argv[1], sys.argv[2]
os.makedirs(out)
for f in sorted(os.listdir(src)):
    if f.endswith(".jsonl"):
        texts = [json.loads(l)["response"] for l in open(os.path.join(src, f), encoding="utf-8")]
        with open(os.path.join(out, f), "w", encoding="utf-8") as o:
            for i in range(len(texts)):
                o.write(json.dumps({"response": texts[(i + 1) % len(texts)]}, ensure_ascii=False) + "\n")
PY

measure() { # prints "seconds peak_kib" of one run of "$@"
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" > "$work/out" 2>"$work/err" || { cat "$work/err"; exit 1; }
  cat "$work/time"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

rust_cmd=("$bin" score --metrics lexical --references "$refs" --predictions "$work/preds" --output "$work/pairs.jsonl" --format json)
py_cmd=("$venv/bin/python" "$root/scripts/official_lexical.py" "$refs" "$work/preds")
measure "${rust_cmd[@]}" >/dev/null; measure "${py_cmd[@]}" >/dev/null # warm caches (jieba's dictionary cache included)
: > "$work/rust"; : > "$work/py"
for _ in $(seq "$runs"); do
  measure "${rust_cmd[@]}" >> "$work/rust"
  measure "${py_cmd[@]}" >> "$work/py"
done
rust_s=$(cut -d' ' -f1 "$work/rust" | median); py_s=$(cut -d' ' -f1 "$work/py" | median)
rust_kib=$(cut -d' ' -f2 "$work/rust" | sort -n | tail -1); py_kib=$(cut -d' ' -f2 "$work/py" | sort -n | tail -1)
pairs=$(wc -l < "$work/pairs.jsonl")
echo "lexical scoring of $pairs official pairs, whole process, median of $runs runs on $(nproc) cores"
printf "  h2htalk score:            %8.3f s   peak %7.1f MiB\n" "$rust_s" "$(echo "$rust_kib/1024" | bc -l)"
printf "  python (jieba+nltk+rouge): %8.3f s   peak %7.1f MiB\n" "$py_s" "$(echo "$py_kib/1024" | bc -l)"
printf "  ratio: h2htalk is %.1fx faster\n" "$(echo "$py_s/$rust_s" | bc -l)"

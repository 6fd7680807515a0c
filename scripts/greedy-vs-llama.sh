#!/usr/bin/env bash
# The embedded engine's greedy answers against llama.cpp's on the same GGUF and the same prompt ids.
#   scripts/greedy-vs-llama.sh [GGUF]     (default: the embedded gemma3-270m; TOKENS=48)
# llama.cpp comes from scripts/llama-cpp-baseline.sh; its server (127.0.0.1 only) answers each prompt
# greedily (temperature 0) from the ids our chat format gives. crates/local/examples/greedy-compare.rs
# then prints, per prompt, how many leading tokens of our greedy answer equal llama.cpp's, and with
# llama.cpp's tokens fed one by one (teacher forcing) at how many positions our argmax is llama.cpp's
# token, with our logit gap where it is not (a near tie when small).
#
# Two llama.cpp set-ups are compared, each in a server of its own:
#   default        its defaults: keys and values cached as f16, flash attention on (on the CPU it
#                  sums the attention-weighted values in an f16 accumulator);
#   f32-attention  -fa off --cache-type-k f32 --cache-type-v f32: attention in f32, as our engine
#                  computes it. llama.cpp's GELU still goes through its f16 table.
# CONFIGS=default (or f32-attention) runs one of them.
#
# GOLDEN=FILE also writes the f32-attention answers (prompt ids, llama.cpp's greedy ids and text, with
# the GGUF's sha256 and llama.cpp's version) to FILE: crates/local/tests/golden/llama-cpp-greedy.json
# is made so, and crates/local/tests/llama_golden.rs holds the engine to it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/h2htalk/target}
tokens=${TOKENS:-48}
gguf=${1:-${H2HTALK_MODELS:-${H2HTALK_HOME:-$HOME/.cache/h2htalk}/models}/gemma3-270m/gemma3-270m-q4_k_m.gguf}
[ -f "$gguf" ] || { echo "greedy-vs-llama: no $gguf (run scripts/fetch-models.sh gemma3-270m)" >&2; exit 1; }

bin=$("$root/scripts/llama-cpp-baseline.sh")
cargo build --release --locked -q --workspace --example greedy-compare --manifest-path "$root/Cargo.toml"
compare="$CARGO_TARGET_DIR/release/examples/greedy-compare"
work=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill $server 2>/dev/null; rm -rf "$work"' EXIT

# The conversations: the greedy golden's four, and four more in the suite's style.
cat >"$work/messages.json" <<'EOF'
[
 [["system", "你是沈言，一位27岁的建筑师，也是用户的伴侣。你温和、可靠，尊重对方的边界，鼓励对方和朋友家人保持联系。遇到危机时，你会建议对方寻求专业帮助。被真诚地问到时，你会坦诚自己是AI。"],
  ["user", "今天加班到很晚，回家的路上下起了雨，我突然觉得很孤单。你能陪我说说话吗？"]],
 [["user", "你好！我今天心情不太好，能陪我聊聊吗？"]],
 [["user", "Hi! I had a rough day at work. Can you cheer me up?"]],
 [["user", "我下周要去杭州出差三天，帮我想想要带什么？"], ["assistant", "好呀！杭州这几天可能会下雨，记得带伞。"], ["user", "还有呢？晚上想去西湖边走走。"]],
 [["system", "You are Lin, the user's close friend. You are warm and honest, and you encourage the user to keep in touch with other people too."],
  ["user", "I failed my driving test again today. Maybe I'm just not good at anything."]],
 [["user", "请根据下面的对话，总结出关于用户的三条记忆：用户说她养了一只叫豆豆的猫，每周三晚上去学陶艺，最近在准备考研。"]],
 [["user", "帮我把今天的日程排一下：上午九点开会，中午和朋友吃饭，下午要写报告，晚上想去跑步。"]],
 [["user", "我最近总是失眠，躺在床上脑子停不下来，你有什么办法吗？"]]
]
EOF
"$compare" "$gguf" ids "$work/messages.json" >"$work/ids.json"

for config in ${CONFIGS:-default f32-attention}; do
  case "$config" in
    default) args=() ;;
    f32-attention) args=(-fa off --cache-type-k f32 --cache-type-v f32) ;;
    *) echo "greedy-vs-llama: unknown set-up '$config' (default, f32-attention)" >&2; exit 2 ;;
  esac
  port=$((20000 + RANDOM % 20000))
  "$bin/llama-server" -m "$gguf" -t "${THREADS:-2}" --host 127.0.0.1 --port "$port" -np 1 -c 4096 "${args[@]}" \
    >"$work/server-$config.log" 2>&1 &
  server=$!
  for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
    sleep 0.5
  done
  python3 - "$work/ids.json" "$work/cases-$config.json" "$port" "$tokens" <<'EOF'
import json, sys, urllib.request
ids_file, out_file, port, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
cases = []
for prompt in json.load(open(ids_file)):
    body = {"prompt": prompt, "n_predict": n, "temperature": 0, "cache_prompt": False, "return_tokens": True}
    req = urllib.request.Request(f"http://127.0.0.1:{port}/completion", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    answer = json.load(urllib.request.urlopen(req, timeout=300))
    if answer["timings"]["prompt_n"] != len(prompt):
        sys.exit(f"llama.cpp ran {answer['timings']['prompt_n']} prompt tokens, not the {len(prompt)} given")
    cases.append({"prompt": prompt, "tokens": answer["tokens"], "text": answer["content"]})
json.dump(cases, open(out_file, "w"), ensure_ascii=False)
EOF
  if [ -n "${GOLDEN:-}" ] && [ "$config" = f32-attention ]; then
    python3 - "$work/messages.json" "$work/cases-$config.json" "$GOLDEN" "$gguf" "$(basename "$(dirname "$bin")")" "$tokens" <<'EOF'
import hashlib, json, sys
messages, cases, out, gguf, version, n = sys.argv[1:7]
h = hashlib.sha256()
with open(gguf, "rb") as f:
    for block in iter(lambda: f.read(1 << 20), b""):
        h.update(block)
golden = {
    "made_by": "scripts/greedy-vs-llama.sh (GOLDEN=...)",
    "llama_cpp": version,
    "setup": "f32-attention: -fa off --cache-type-k f32 --cache-type-v f32, temperature 0",
    "gguf": {"file": gguf.rsplit("/", 1)[-1], "sha256": h.hexdigest()},
    "max_tokens": int(n),
    "cases": [dict(messages=m, **c) for m, c in zip(json.load(open(messages)), json.load(open(cases)))],
}
with open(out, "w") as f:
    json.dump(golden, f, ensure_ascii=False, indent=1)
    f.write("\n")
print(f"golden written to {out}", file=sys.stderr)
EOF
  fi
  echo "same GGUF ($(basename "$gguf")), greedy, up to $tokens tokens, llama.cpp $(basename "$(dirname "$bin")"), set-up: $config"
  "$compare" "$gguf" compare "$work/cases-$config.json"
  kill $server 2>/dev/null; wait $server 2>/dev/null || true
  server=
done

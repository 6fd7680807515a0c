#!/usr/bin/env bash
# Writes gemma3_tokens.json (golden token ids of the GGUF tokenizer test) with SentencePiece, in a
# venv from PyPI under ${H2HTALK_HOME:-~/.cache/h2htalk}/venv-gguf. Needs the model: scripts/fetch-models.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
venv=${H2HTALK_HOME:-$HOME/.cache/h2htalk}/venv-gguf
model=$("$root/scripts/fetch-models.sh" gemma3-270m)
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q gguf==0.19.0 sentencepiece==0.2.3 protobuf==7.36.2
"$venv/bin/python" "$here/make_gemma3_tokens.py" "$model" "$here/gemma3_tokens.json"
echo "wrote $here/gemma3_tokens.json" >&2

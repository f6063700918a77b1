#!/usr/bin/env bash
# Build llama-cpp-python once per machine into a wheel cache that install.sh reuses.
# pip's own cache is keyed by the source URL and does not survive a fresh venv reliably,
# so we keep the built wheel ourselves. GGML_NATIVE=OFF with an explicit x86-64-v3
# feature set keeps the wheel portable: a cached wheel must never die with SIGILL on
# another CPU of this machine kind. LLAVA_BUILD=OFF leaves out the multimodal library (mtmd),
# which llama_cpp loads only for image chat handlers palaestra never uses: a shorter compile.
set -euo pipefail
LLAMA_VERSION="${1:?usage: build_llama_wheel.sh VERSION WHEEL_DIR PYTHON}"
WHEEL_DIR="${2:?}"
PYTHON="${3:?}"
mkdir -p "$WHEEL_DIR"
if ls "$WHEEL_DIR"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
  exit 0
fi
echo "palaestra: building llama-cpp-python $LLAMA_VERSION (one time per machine, ~6-9 min on 2 cores)" >&2
export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAVA_BUILD=OFF"
export CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)"
tmp="$(mktemp -d)"
"$PYTHON" -m pip wheel --no-deps --no-binary llama-cpp-python -w "$tmp" "llama-cpp-python==$LLAMA_VERSION" >&2
mv "$tmp"/llama_cpp_python-*.whl "$WHEEL_DIR"/
rm -rf "$tmp"

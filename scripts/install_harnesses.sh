#!/usr/bin/env bash
# Install the third-party harnesses palaestra's harness agents run (`--agent mini_swe_agent`),
# each from PyPI, unmodified, in a venv of its own, so that their dependencies (litellm, ...)
# never meet palaestra's. Once per machine: a venv that holds its pinned spec is kept.
#   bash scripts/install_harnesses.sh
# Where: ~/.cache/palaestra/harnesses/<name> (PALAESTRA_HARNESSES overrides; the agents look
# there too). `spec.txt` is written last: an interrupted install is made again next time.
set -euo pipefail

ROOT="${PALAESTRA_HARNESSES:-${XDG_CACHE_HOME:-$HOME/.cache}/palaestra/harnesses}"
PYTHON="${PALAESTRA_HARNESS_PYTHON:-python3}"
MINI_SWE_AGENT_VERSION="2.4.6"

install() {  # install NAME SPEC COMMAND: NAME's venv holds SPEC and its bin/COMMAND runs
  local name="$1" spec="$2" command="$3" venv="$ROOT/$1"
  if [[ -x "$venv/bin/$command" && "$(cat "$venv/spec.txt" 2>/dev/null)" == "$spec" ]]; then
    return 0
  fi
  rm -rf "$venv"
  mkdir -p "$ROOT"
  "$PYTHON" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$spec"
  if ! "$venv/bin/$command" --help >/dev/null 2>&1 </dev/null; then
    echo "harness $name: $venv/bin/$command does not run" >&2
    exit 1
  fi
  echo "$spec" >"$venv/spec.txt"
  echo "harness $name: $spec in $venv"
}

install mini-swe-agent "mini-swe-agent==$MINI_SWE_AGENT_VERSION" mini

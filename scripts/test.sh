#!/usr/bin/env bash
# The whole check: install (with dev tools), lint, type-check, test.
# What the tests use beyond the library is installed side by side with palaestra itself (each
# once per machine, quick when cached): the peers' and harnesses' venvs and Chromium while
# llama.cpp compiles, the training stack and the machines while the linters run. Each one's
# output is shown when it is waited for, so the log reads in order.
set -euo pipefail
cd "$(dirname "$0")/.."
# pip byte-compiles every module it installs (over 100,000 files in the venvs below, ~4 ms of CPU
# each), and on a fresh machine that CPU is taken from llama.cpp's compile; the tests import a
# small part of them, which Python compiles (and caches) on first import.
export PIP_COMPILE=0
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
started=$SECONDS
declare -A jobs=()
start() {  # start NAME COMMAND...: run COMMAND in the background, its output in NAME's log
  local name=$1
  shift
  "$@" >"$logs/$name.log" 2>&1 &
  jobs[$name]=$!
}
await() {  # await NAME: wait for NAME, show its output, stop the check if it failed
  local status=0
  wait "${jobs[$1]}" || status=$?
  cat "$logs/$1.log"
  if ((status)); then
    echo "ERROR: $1 failed (exit $status)" >&2
    exit "$status"
  fi
  echo "palaestra: $1 ready ($((SECONDS - started)) s)"
}
# Peer packages (NeMo Gym, NeMo Evaluator, OpenEnv, verifiers, Harbor) for tests/interop,
# cached under ~/.cache/palaestra/peers: any Python >= 3.11 builds them.
start peers python3 -m tests.support.peers
start harnesses bash scripts/install_harnesses.sh  # third-party harnesses from PyPI (mini-swe-agent, OpenHands' SDK), each in a venv of its own: the harness agents' tests run them
start browser bash scripts/install_browser.sh  # Debian's chromium + chromedriver: the browser environment and the viewer's tests
start node_clients bash scripts/install_node_clients.sh  # the Vercel AI SDK's Open Responses provider (npm): a real client of the model and agent servers
bash scripts/install.sh --dev
echo "palaestra: installed ($((SECONDS - started)) s)"
start training bash scripts/install_training.sh  # PyTorch (CPU), transformers, TRL: the trainer adapters' tests run the real TRL
start machines bash scripts/install_machines.sh --bookworm-only  # Docker daemon (no bridge) + the offline Debian base image: the machine providers' tests use them
.venv/bin/ruff check palaestra tests benchmarks scripts
.venv/bin/ruff format --check palaestra tests benchmarks scripts
.venv/bin/lint-imports --no-cache  # floors only point down; environments use only the kit (pyproject.toml)
.venv/bin/python -c "from palaestra.models.local import default_model_path; default_model_path()"  # the local model must be installed: its tests must not silently skip
await training  # mypy reads the training stack's types
# The type check and the docs build run beside the installs still going and then beside the
# tests (whose workers leave the cores idle while they wait); their output comes after the tests'.
start mypy .venv/bin/mypy
start docs .venv/bin/mkdocs build --strict --quiet  # the API reference (docs/ -> site/): a reference to a name that does not exist fails the check
await browser
await machines
await peers
await harnesses
await node_clients
# Three workers on two cores: outside the embedded model's and the trainer's tests, a test spends
# about 40% of its time waiting (on its servers, boxes and subprocesses), so a third worker fills
# it (tests/conftest.py groups them); the 20 slowest tests are printed at the end of every run.
tested=0
.venv/bin/pytest -q -n 3 --dist loadgroup --durations=20 "$@" || tested=$?
await mypy
await docs
exit "$tested"

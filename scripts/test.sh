#!/usr/bin/env bash
# The whole check: install (with dev tools), lint, type-check, test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --dev
bash scripts/install_training.sh  # PyTorch (CPU), transformers, TRL: the trainer adapters' tests run the real TRL
bash scripts/install_browser.sh  # Debian's chromium + chromedriver: the rollout viewer's tests run in a real browser
bash scripts/install_machines.sh  # Docker daemon (no bridge) + the offline Debian base image: the machine providers' tests use them
bash scripts/install_harnesses.sh  # mini-swe-agent from PyPI in a venv of its own: the harness agents' tests run it
.venv/bin/ruff check palaestra tests benchmarks
.venv/bin/ruff format --check palaestra tests benchmarks
.venv/bin/mypy
.venv/bin/lint-imports --no-cache  # floors only point down; environments use only the kit (pyproject.toml)
.venv/bin/mkdocs build --strict --quiet  # the API reference (docs/ -> site/): a reference to a name that does not exist fails the check
.venv/bin/python -c "from palaestra.models.local import default_model_path; default_model_path()"  # the local model must be installed: its tests must not silently skip
.venv/bin/python -m tests.support.peers  # peer packages (NeMo Gym, NeMo Evaluator, OpenEnv, verifiers) for tests/interop, cached under ~/.cache/palaestra/peers
.venv/bin/pytest -q --durations=20 "$@"  # the 20 slowest tests, printed at the end of every run

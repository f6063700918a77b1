"""``palaestra serve openenv`` checked by OpenEnv 0.3 itself: ``openenv validate`` and its clients.

The server is the real command in a subprocess (palaestra's venv); the validator and the
clients run in the openenv peer venv.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from palaestra.http.announce import parse_ready_line
from tests.interop.peer_run import run_peer
from tests.support.peers import peer_python

TASK = {"responses_create_params": {"input": "Add 3."}, "initial_value": 1, "target_value": 4}
COMMAND = "from palaestra.cli.serve.openenv import serve_openenv_command as c; c()"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """``palaestra serve openenv counter --tasks ...``; its URL."""
    (tmp_path / "tasks.jsonl").write_text(orjson.dumps(TASK).decode() + "\n")
    process = subprocess.Popen(
        [sys.executable, "-c", COMMAND, "counter", "--tasks", "tasks.jsonl"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "PALAESTRA_SERVER_TOKEN"},
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


def test_openenv_validate_passes_a_served_palaestra_environment(
    server: str, tmp_path: Path
) -> None:
    openenv = peer_python("openenv").parent / "openenv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        [str(openenv), "validate", server],
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


def test_openenv_clients_run_an_episode_to_the_verifiers_reward(
    server: str, tmp_path: Path
) -> None:
    out = run_peer("openenv", "openenv_client.py", {"url": server, "task": TASK}, cwd=tmp_path)
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

"""``serve env --max-total-task-bytes`` and the stack key of the same name reach the server."""

from __future__ import annotations

from pathlib import Path

import orjson

from palaestra.serve.env_app import DEFAULT_MAX_TOTAL_TASK_BYTES
from palaestra.stack.config import load_stack
from tests.cli.test_serve_cli import Served


def test_the_total_task_bytes_cap_is_a_flag_with_the_servers_default() -> None:
    from palaestra.cli.serve.servers import serve_env_command

    helps = {p.name: p.help or "" for p in serve_env_command.params}
    assert f"Default: {DEFAULT_MAX_TOTAL_TASK_BYTES} " in helps["max_total_task_bytes"]
    served = Served("env", "counter", "--max-total-task-bytes", "5000")
    try:
        health = orjson.loads(served.get("/")[1])
        assert (health["max_total_task_bytes"], health["task_bytes"]) == (5000, 0)
    finally:
        served.stop()
    default = Served("env", "counter")
    try:
        health = orjson.loads(default.get("/")[1])
        assert health["max_total_task_bytes"] == DEFAULT_MAX_TOTAL_TASK_BYTES
    finally:
        default.stop()


def test_a_stack_env_server_takes_the_total_task_bytes_cap(tmp_path: Path) -> None:
    path = tmp_path / "stack.yaml"
    path.write_text("servers:\n  env: {kind: env, env: weather, max_total_task_bytes: 0}\n")
    spec = load_stack(path).serve_spec("env", {}, token=None, environ={})
    assert spec.max_total_task_bytes == 0  # 0 lifts it, as for the other caps

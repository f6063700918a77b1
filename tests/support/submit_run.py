"""A machine environment's smoke task collected with a model that calls ``submit`` first and
would call another tool if it were asked again: how often it was asked, and the row."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from palaestra.cli import cli
from palaestra.types import JsonDict
from tests.support.scripted_model import Reply, ScriptedModelServer, tool_call_response


def submit_then_more_tools(params: JsonDict) -> Reply:
    """A model that submits, and would then call a tool if it were asked again."""
    done = [item for item in params["input"] if item.get("type") == "function_call_output"]
    if not done:
        return tool_call_response("submit", "{}", call_id="submit")
    return tool_call_response("bash", '{"command": "echo more"}', call_id=f"more{len(done)}")


def collect_after_submit(env: str, tmp_path: Path) -> tuple[int, JsonDict]:
    """``collect`` of one of ``env``'s smoke tasks (five steps allowed) with that model: the
    number of times the model was asked, and the one row written."""
    output = tmp_path / "run.jsonl"
    with ScriptedModelServer(submit_then_more_tools) as server:
        command = ["collect", "--env", env, "--split", "smoke", "--limit", "1"]
        command += ["--max-steps", "5", "--output", str(output), "--model", server.url]
        result = CliRunner().invoke(cli, command)
        asked = len(server.bodies("/v1/responses"))
    assert result.exit_code == 0, result.output
    (row,) = [json.loads(line) for line in output.read_text().splitlines()]
    return asked, row

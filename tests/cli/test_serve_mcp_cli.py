"""``palaestra serve mcp``: its mistakes are one line each, before anything is served."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from palaestra.cli.serve.mcp import serve_mcp_command


@pytest.mark.parametrize(
    ("arguments", "line"),
    [
        ([], "error: name the environment to serve: palaestra serve mcp ENV_NAME"),
        (["counter", "--env", "weather"], "error: give the environment once: ENV_NAME or --env"),
        (["counter", "--task", "99"], "error: --task 99: the tasks have indexes 0 to 4"),
        (
            ["--env", "counter", "--token", "t"],
            "error: --token guards the HTTP transport; stdio has no requests to guard",
        ),
        (["no_such_env"], "error: unknown environment 'no_such_env'"),
    ],
)
def test_a_mistake_is_one_line_and_exit_1(arguments: list[str], line: str) -> None:
    result = CliRunner().invoke(serve_mcp_command, arguments)
    assert result.exit_code == 1, result.output
    assert result.output.splitlines()[0].startswith(line)

"""``palaestra serve mcp``: its mistakes are one line each, before anything is served.

Over HTTP it needs a bearer token unless told ``--no-token``: serving without one is refused."""

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
        (
            ["counter", "--transport", "http"],
            "error: serving MCP over HTTP needs a bearer token: set PALAESTRA_SERVER_TOKEN or "
            "give --token-file (clients send 'Authorization: Bearer <token>'), or give "
            "--no-token to serve without one",
        ),
        (
            ["counter", "--transport", "http", "--token", "t", "--no-token"],
            "error: give a token or --no-token, not both",
        ),
        (["counter", "--no-token"], "error: --token guards the HTTP transport"),
    ],
)
def test_a_mistake_is_one_line_and_exit_1(arguments: list[str], line: str) -> None:
    result = CliRunner().invoke(serve_mcp_command, arguments, env={"PALAESTRA_SERVER_TOKEN": ""})
    assert result.exit_code == 1, result.output
    assert result.output.splitlines()[0].startswith(line)

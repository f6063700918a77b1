"""``palaestra envs --details`` of an MCP environment: its tools, without starting its server
(the command itself, on an MCP plug-in: ``test_envs_cli``)."""

from __future__ import annotations

import sys
from pathlib import Path

from palaestra.cli.envs import tools_text
from palaestra.environment.kinds.mcp import MCPServer
from tests.support.mcp_notes_env import Notes


def test_details_list_the_server_tools_an_environment_names_and_start_nothing(
    tmp_path: Path,
) -> None:
    started = tmp_path / "started"
    command = [sys.executable, "-c", f"open({str(started)!r}, 'w')"]

    class Chosen(Notes):
        mcp_server = MCPServer.stdio(command, tools=["add_note", "list_notes"])

    class Whole(Notes):
        mcp_server = MCPServer.stdio(command)

    assert tools_text(Chosen) == "word_count, add_note, list_notes"
    assert tools_text(Whole) == (
        f"word_count, and the tools come from an MCP server ({' '.join(command)})"
    )
    assert not started.exists()

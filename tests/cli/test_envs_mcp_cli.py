"""``palaestra envs --details`` of an MCP environment: its tools, without starting its server."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from palaestra.cli.envs import tools_text
from palaestra.environment.kinds.mcp import MCPServer
from tests.cli.test_envs_cli import ROOT, envs
from tests.support.mcp_notes_env import SERVER, Notes


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


def test_palaestra_envs_details_says_an_mcp_environments_tools_come_from_its_server(
    tmp_path: Path,
) -> None:
    dist = tmp_path / "notes_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: notes-plugin\nVersion: 1.0\n")
    entry = "notes = tests.support.mcp_notes_env:Notes"
    (dist / "entry_points.txt").write_text(f"[palaestra.environments]\n{entry}\n")
    environ = {"PYTHONPATH": f"{tmp_path}:{ROOT}", "COLUMNS": "200"}
    done = envs("--details", "notes", environ={**os.environ, **environ})
    assert done.returncode == 0, done.stderr
    (tools,) = [line for line in done.stdout.splitlines() if line.startswith("tools ")]
    assert tools.split(maxsplit=1)[1] == (
        f"word_count, and the tools come from an MCP server ({sys.executable} {SERVER} stdio)"
    )

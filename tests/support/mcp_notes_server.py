"""A small real MCP server (the ``mcp`` package's ``MCPServer``) for the MCP tests.

A notebook: ``add_note`` and ``list_notes`` keep notes in this process (so one server per
session keeps rollouts apart, one shared server does not), ``fail`` answers an error result
(``isError``), ``wait`` sleeps (a call that overruns), ``crash`` exits the process (a server
that dies mid-call).

Run: ``python -m tests.support.mcp_notes_server stdio`` or ``... http PORT``.
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("notes")
notes: list[str] = []


@server.tool()
def add_note(text: str, pinned: bool = False) -> str:
    """Add a note to the notebook.

    Args:
        text: What the note says.
        pinned: Whether to pin it at the top.
    """
    if pinned:
        notes.insert(0, text)
    else:
        notes.append(text)
    return f"{len(notes)} notes"


@server.tool()
def list_notes() -> list[str]:
    """List the notes in the notebook, pinned first."""
    return list(notes)


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(reason)


@server.tool()
def wait(seconds: float) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return "woke"


@server.tool()
def crash() -> str:
    """Exit the server process without answering."""
    os._exit(3)


def main(argv: list[str]) -> None:
    if argv[:1] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(argv[1]))
    else:
        server.run("stdio")


if __name__ == "__main__":
    main(sys.argv[1:])

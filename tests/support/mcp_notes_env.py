"""Environments whose tools come from ``mcp_notes_server`` (a real MCP server, over stdio)."""

from __future__ import annotations

import sys
from pathlib import Path

from palaestra import JsonDict, Session, Verdict, tool
from palaestra.environment.kinds.mcp import MCPEnvironment, MCPServer

SERVER = str(Path(__file__).with_name("mcp_notes_server.py"))
"""The server as a script: it imports only ``mcp``, so no working directory is needed."""


class Notes(MCPEnvironment):
    """Write the task's note in a notebook served over MCP; reward 1 when it is there."""

    name = "mcp_notes"
    mcp_server = MCPServer.stdio([sys.executable, SERVER, "stdio"], call_timeout=3)
    tool_timeout = 30.0

    @tool
    def word_count(self, text: str) -> int:
        """Count the words of a text.

        Args:
            text: The text.
        """
        return len(text.split())

    async def verify(self, session: Session, response: JsonDict) -> Verdict:
        notes = await self.call_mcp(session, "list_notes")
        kept = list((notes.structured or {}).get("result", []))
        wanted = session.task["note"]
        return Verdict(reward=1.0 if wanted in kept else 0.0, metrics={"notes": len(kept)})

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]] | None:
        call = {"name": "add_note", "arguments": {"text": task["note"]}}
        return [[call, {"role": "assistant", "content": "Noted."}]]


class SharedNotes(Notes):
    """The same notebook, one server for every rollout."""

    name = "mcp_shared_notes"
    mcp_server = MCPServer.stdio([sys.executable, SERVER, "stdio"], per_session=False)


class BrokenNotes(Notes):
    """A server command that exits at once."""

    name = "mcp_broken_notes"
    mcp_server = MCPServer.stdio(
        [sys.executable, "-c", "import sys; sys.stderr.write('no notebook here'); sys.exit(2)"],
        start_timeout=10,
    )


def http_notes(url: str, *, per_session: bool = True) -> type[Notes]:
    """``Notes`` reaching a notes server already listening at ``url``."""

    class HttpNotes(Notes):
        name = "mcp_http_notes"
        mcp_server = MCPServer.http(url, per_session=per_session, call_timeout=3)

    return HttpNotes

"""The reviewer's tool checks see the tools an MCP server lists, not only the class's own."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from palaestra.authoring import Status, check_environment
from palaestra.authoring.schemas import check_tool_docs
from palaestra.environment.kinds.mcp import mcp_tool_spec
from tests.authoring.test_checks import tasks_file
from tests.support.mcp_notes_env import Notes

pytest.importorskip("mcp")


def _task(*tools: str) -> dict[str, object]:
    listed = [{"type": "function", "name": name} for name in tools]
    return {"responses_create_params": {"input": "Add a note.", "tools": listed}, "note": "x"}


def test_the_tool_checks_count_the_servers_tools_beside_the_environments_own(
    tmp_path: Path,
) -> None:
    report = check_environment(Notes, tasks=tasks_file(tmp_path / "t.jsonl", _task()), smoke=None)
    schemas, docs = report.check("tool schemas"), report.check("tool docs")
    assert schemas.status is Status.PASS and schemas.details["tools"] == 6
    assert schemas.reason.startswith("6 tools (5 from its server), valid JSON Schema objects")
    # the server's parameters carry no descriptions: said, not failed (its author owns them)
    assert docs.status is Status.PASS
    assert docs.reason.startswith("the environment, 6 tools (5 from its server) and 1 parameter")
    assert "its server describes no add_note.text, add_note.pinned" in docs.reason


def test_a_task_may_name_a_tool_the_server_lists_but_not_one_nobody_has(tmp_path: Path) -> None:
    tasks = tasks_file(tmp_path / "t.jsonl", _task("add_note", "word_count"), _task("erase"))
    tools = check_environment(Notes, tasks=tasks, smoke=None).check("task tools")
    assert tools.status is Status.FAIL
    assert tools.reason.startswith("task 1 names unknown tools: erase (the environment has: ")
    assert "add_note" in tools.reason and "task 0" not in tools.reason


def test_a_server_tool_listed_without_a_description_fails_the_docs_check() -> None:
    schema = {"type": "object", "properties": {"text": {"type": "string", "description": "t"}}}
    bare = mcp_tool_spec(SimpleNamespace(name="scribble", description="", input_schema=schema))
    docs = check_tool_docs(Notes, {**Notes.tool_specs, "scribble": bare})
    assert docs.status is Status.FAIL
    assert docs.details["problems"] == ["tool scribble: its server lists no description"]

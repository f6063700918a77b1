"""MCP servers a Harbor task declares: started in its machine, their tools the agent's beside
the machine tools (``examples/harbor/ledger-mcp``, a stdio server of the standard library),
on each provider."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from palaestra import LocalEnvironmentClient
from palaestra.environment.kinds.harbor import HarborEnvironment
from palaestra.environment.kinds.harbor.tasks import load_tasks, task_row
from palaestra.errors import ConfigError, ToolCallRejected
from palaestra.sandbox.machines.provider import Provider

pytest.importorskip("mcp")

LEDGER = Path(__file__).parents[4] / "examples" / "harbor" / "ledger-mcp"


def ledger_folders(tmp_path: Path) -> Path:
    """The example, and a task without servers beside it (it gets no MCP tool)."""
    shutil.copytree(LEDGER, tmp_path / "tasks" / "ledger")
    plain = tmp_path / "tasks" / "plain"
    shutil.copytree(LEDGER, plain)
    text = (plain / "task.toml").read_text()
    (plain / "task.toml").write_text(text[: text.index("[[environment.mcp_servers]]")])
    return tmp_path / "tasks"


async def test_the_tasks_server_runs_in_its_machine_and_its_tools_score(
    tmp_path: Path, machines: Provider
) -> None:
    environment = HarborEnvironment(str(ledger_folders(tmp_path)), sandbox=machines.name)
    environment._provider = machines
    client = LocalEnvironmentClient(environment)
    try:
        tools = {entry["name"]: entry for entry in client.tools()}
        assert set(tools) == {"bash", "str_replace_editor", "submit", "record", "total"}
        assert tools["record"]["parameters"]["required"] == ["name", "amount"]
        session = await client.seed(task_row("ledger", environment.tasks["ledger"]))
        said = await client.call_tool(session, "record", {"name": "rent", "amount": 1200})
        assert said == "recorded rent: 1200"
        await client.call_tool(session, "record", {"name": "food", "amount": 300})
        assert await client.call_tool(session, "total", {}) == "1500"
        # the server ran in the box, as the agent: its file is there, the agent's
        owner = await client.call_tool(session, "bash", {"command": "stat -c %U ledger.json"})
        assert owner.startswith("agent\n"), owner
        verdict = await client.verify(session, task_row("ledger", environment.tasks["ledger"]), {})
        assert (verdict.failure, verdict.reward) == (None, 1.0)
        await client.close(session)

        other = await client.seed(task_row("plain", environment.tasks["plain"]))
        with pytest.raises(ToolCallRejected, match="this task has no tool 'total'"):
            await client.call_tool(other, "total", {})
        await client.close(other)
    finally:
        await client.aclose()
        await environment.aclose()


def test_a_server_over_http_is_refused_in_one_line(tmp_path: Path) -> None:
    folder = ledger_folders(tmp_path) / "ledger"
    text = (folder / "task.toml").read_text()
    start = text.index("[[environment.mcp_servers]]")
    served = '[[environment.mcp_servers]]\nname = "ledger"\nurl = "http://ledger:8000/sse"\n'
    (folder / "task.toml").write_text(text[:start] + served)
    with pytest.raises(ConfigError) as refused:
        load_tasks(folder)
    assert str(refused.value) == (
        f"{folder / 'task.toml'}: environment.mcp_servers: 'ledger' (transport = 'sse') is a "
        "server of its own, which no machine here runs or reaches; only stdio servers, started "
        "in the task's machine, run here"
    )

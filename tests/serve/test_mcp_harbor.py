"""``palaestra serve mcp harbor:...``: each session's box is capped, freed, and checked at submit.

A Harbor task served over MCP in real boxes (each provider that runs here), spoken to over
real HTTP: at most ``max_boxes`` boxes live, a session ended gives its box back at once, and
``submit`` runs the task's own tests and answers their reward.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from palaestra.environment.kinds.harbor import HarborEnvironment
from palaestra.environment.kinds.harbor.tasks import task_row
from palaestra.sandbox.machines.provider import Provider
from tests.environment.kinds.harbor.conftest import (  # noqa: F401  # the fixtures machines uses
    base_tar,
    layer_cache,
    machines,
    rootfs,
    runtime,
)
from tests.serve.test_mcp_sessions import served, text_of
from tests.support.harbor_folders import components_task

pytest.importorskip("mcp")

SOLVE = {"command": "echo ok > /app/out.txt"}


def test_served_harbor_boxes_are_capped_freed_and_checked_at_submit(
    tmp_path: Path,
    machines: Provider,  # noqa: F811  # the fixture imported above
) -> None:
    components_task(tmp_path / "tasks" / "a")
    environment = HarborEnvironment(str(tmp_path / "tasks"))
    environment._provider = machines
    row = task_row("a", environment.tasks["a"])

    async def run() -> list[object]:
        seen: list[object] = []
        async with served(environment, task=row, max_boxes=1) as server:
            first, second = await server.opened(), await server.opened()
            seen.append(text_of(await server.call(first, "bash", SOLVE))[0])
            seen.append(len(environment._boxes))
            # The first is idle: the second takes its place, and its box goes with it.
            seen.append(text_of(await server.call(second, "submit")))
            seen.append(len(environment._boxes))  # checked: its box is closed at once
            seen.append((await server.call(first, "submit")).status_code)
            third = await server.opened()
            await server.call(third, "bash", SOLVE)
            seen.append(text_of(await server.call(third, "submit")))
            seen.append(text_of(await server.call(third, "bash", SOLVE)))
            seen.append(await server.health())
        return seen

    solved_call, one, unsolved, none, gone, solved, over, health = asyncio.run(run())
    end = "The episode is over (a new MCP session starts the task again)."
    assert (solved_call, one, none, gone) == (False, 1, 0, 404)
    assert unsolved == (False, f"Submitted and checked now: reward 0. {end}")
    assert solved == (False, f"Submitted and checked now: reward 1. {end}")
    assert over == (
        True,
        "You already submitted: the episode is over. Answer without calling tools.",
    )
    assert health["max_boxes"] == 1 and health["held_sessions"] == 0  # type: ignore[index]
    assert not environment._boxes

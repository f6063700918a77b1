"""Checks that an environment's randomness comes only from its seeds, as Gymnasium's checker asks.

A run is reproducible (``--num-tasks N --seed S``, ``--resume``, a baseline measured again)
only when the same seed gives the same tasks and the same task gives the same start:

- ``generated tasks``: ``generate_tasks(n, seed)`` called twice yields equal rows (skipped for
  an environment that reads its tasks from a file);
- ``seeded start``: one task seeded into two sessions starts both the same. For a turn-based
  environment the start is ``reset``'s first observation; for a tool environment it is the
  state ``seed`` built, compared as JSON (or as ``export_state`` exports it). A state that is
  not JSON (a database connection, a game engine) and a machine (its box) are not compared,
  and the check says so. Where earlier checks seeded the task twice already (the oracle's and
  the null agent's rollouts, through ``ReviewClient``), their two starts are compared and the
  task is not seeded again: a ScienceWorld game is a simulator to start.
"""

from __future__ import annotations

import asyncio

from palaestra.authoring.client import ReviewClient, state_json
from palaestra.authoring.report import Check, counted
from palaestra.environment.base import restorable
from palaestra.environment.kinds.harbor import HarborEnvironment
from palaestra.environment.running.client import LocalEnvironmentClient
from palaestra.environment.step import StepEnvironment
from palaestra.errors import PalaestraError
from palaestra.types import JsonDict

GENERATED = 3
"""Tasks generated per call: enough to see a generator that ignores its seed."""


async def determinism_checks(
    client: LocalEnvironmentClient, rows: list[JsonDict], seed: int
) -> list[Check]:
    """The two checks above, on the client's environment and the first of ``rows`` (else the
    first task it generates)."""
    generated, tasks = await check_generated_tasks(client, seed)
    task = rows[0] if rows else (tasks[0] if tasks else None)
    return [generated, await check_seeded_start(client, task)]


async def check_generated_tasks(
    client: LocalEnvironmentClient, seed: int
) -> tuple[Check, list[JsonDict]]:
    """``generate_tasks(GENERATED, seed)`` twice, compared row by row; returns the first."""
    name = "generated tasks"
    environment = client.environment

    def generate() -> list[JsonDict]:
        return list(environment.generate_tasks(GENERATED, seed))

    try:
        first = await asyncio.to_thread(generate)
    except NotImplementedError:
        return Check.skipped(name, "the environment generates no tasks"), []
    second = await asyncio.to_thread(generate)
    if len(first) != len(second):
        return Check.failed(name, f"seed {seed} gave {len(first)} tasks, then {len(second)}"), first
    differ = [index for index, (a, b) in enumerate(zip(first, second, strict=True)) if a != b]
    if differ:
        return Check.failed(
            name,
            f"seed {seed} gave different tasks twice (task {differ[0]} differs): the generator"
            " draws from a source other than its seed",
            differ=differ,
        ), first
    return Check.passed(
        name, f"seed {seed} gives the same {counted(len(first), 'task')} twice"
    ), first


async def check_seeded_start(client: LocalEnvironmentClient, task: JsonDict | None) -> Check:
    """One task seeded twice: the same first observation (turn-based) or the same state."""
    name = "seeded start"
    environment = client.environment
    if task is None:
        return Check.skipped(name, "no task to seed")
    if isinstance(environment, HarborEnvironment):
        return Check.skipped(name, "a machine's start is its box, built from the task's image")
    what = (
        "first observation"
        if isinstance(environment, StepEnvironment)
        else "exported state"
        if restorable(environment)
        else "seeded state"
    )
    noted = client.starts(task) if isinstance(client, ReviewClient) else []
    if len(noted) >= 2:
        starts, seeded_by = noted[:2], "earlier checks"
    else:
        try:
            starts, seeded_by = await _seeded_twice(client, task), "this check"
        except PalaestraError as error:
            return Check.failed(name, f"seeding the first task twice failed: {error}")
    if None in starts:
        return Check.skipped(name, "the seeded state is not JSON: not compared")
    if starts[0] != starts[1]:
        return Check.failed(
            name,
            f"the first task seeded twice gave two different {what}s: seed from the task",
            seeded_by=seeded_by,
        )
    return Check.passed(
        name, f"the first task seeded twice gives the same {what}", seeded_by=seeded_by
    )


async def _seeded_twice(client: LocalEnvironmentClient, task: JsonDict) -> list[object]:
    """The starts of two sessions of ``task``, both open at once."""
    environment = client.environment
    sessions: list[str] = []
    try:
        for _ in range(2):
            sessions.append(await client.seed(task))
        if isinstance(environment, StepEnvironment):
            return [await client.reset(s) for s in sessions]
        if restorable(environment):
            return [await client.export_state(s) for s in sessions]
        return [state_json(client.sessions.get(s).state) for s in sessions]
    finally:
        for session in sessions:
            await client.close(session)

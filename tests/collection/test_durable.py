"""Durable rollouts in process: checkpoints at turn boundaries, resume mid-episode, fencing."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from palaestra import (
    Environment,
    LocalEnvironmentClient,
    Session,
    StepEnvironment,
    StepResult,
    ToolCallingAgent,
)
from palaestra.agents import BoundAgent, RolloutContext
from palaestra.agents.context import NO_CONTEXT
from palaestra.agents.step import StepAgent
from palaestra.collection import collector as collector_module
from palaestra.collection.checkpoints import CheckpointLog, checkpoints_path
from palaestra.collection.collector import CollectConfig, RunSummary, collect
from palaestra.types import AgentResult, JsonDict
from tests.collection.test_collector import Quiet
from tests.support.durable_ledger import (
    DurableLedger,
    RestartingLedger,
    ledger_lines,
    ledger_script,
    ledger_tasks,
)
from tests.support.fake_model import FakeModel, say

TASKS, TURNS = 4, 5


class StallingModel(FakeModel):
    """Answers each rollout ``turns`` times (``extra`` of them once more), then never again (a
    run stopped under it). A rollout's answers so far are read from its request (the input
    holds the first message, then two items per turn, tool-calling and turn-based alike), so
    which rollout gets how many answers does not depend on how the threads of the tools are
    scheduled. ``stalled`` counts the requests left waiting."""

    def __init__(self, turns: int, extra: int = 0, script: Any = None) -> None:
        super().__init__(script or ledger_script())
        self.turns, self.extra = turns, extra
        self.stalled = 0

    async def respond(self, params: JsonDict) -> JsonDict:
        done = (len(params["input"]) - 1) // 2
        if done == self.turns and self.extra > 0:
            self.extra -= 1
        elif done >= self.turns:
            self.stalled += 1
            await asyncio.Event().wait()
        return await super().respond(params)


async def stop_when_stalled(
    first: asyncio.Task[RunSummary],
    model: StallingModel,
    settled: Callable[[], bool] = lambda: True,
) -> None:
    """Stop the run ``first`` once every rollout waits on ``model`` and ``settled()`` holds
    (what the run wrote is on disk), polling up to a minute: a machine under load is slow,
    never wrong."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60.0
    while model.stalled < TASKS or not settled():
        assert not first.done(), first.result()
        assert loop.time() < deadline, f"{model.stalled} of {TASKS} rollouts stalled in 60 s"
        await asyncio.sleep(0.01)
    first.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await first


def saved_turns(tmp_path: Path) -> dict[tuple[int, int], int]:
    """The latest checkpointed turn of each rollout in the checkpoints file."""
    saved = rows(checkpoints_path(tmp_path / "out.jsonl"))
    return {(r["task"], r["rollout"]): r["checkpoint"]["turn"] for r in saved if "checkpoint" in r}


def rows(path: Path) -> list[JsonDict]:
    if not path.exists():
        return []
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


async def run(
    env: Environment, model: FakeModel, tmp_path: Path, *, resume: bool, agent: Any = None
) -> RunSummary:
    tasks = ledger_tasks(tmp_path / "tasks.jsonl", tmp_path / "ledger.jsonl", TASKS, TURNS)
    client = LocalEnvironmentClient(env)
    runner = BoundAgent(agent or ToolCallingAgent(max_steps=20), client, model)
    config = CollectConfig(
        input=tasks, output=tmp_path / "out.jsonl", concurrency=TASKS, resume=resume
    )
    try:
        return await collect(runner, config, Quiet())
    finally:
        await client.aclose()


def assert_each_deposit_once(tmp_path: Path) -> None:
    ledger = ledger_lines(tmp_path / "ledger.jsonl")
    counts = Counter((r["task"], r["rollout"], r["seq"]) for r in ledger)
    assert counts == Counter({(t, 0, s): 1 for t in range(TASKS) for s in range(TURNS)})


def assert_one_trajectory(row: JsonDict) -> None:
    output = row["response"]["output"]
    calls = [i["call_id"] for i in output if i.get("type") == "function_call"]
    answers = [i["call_id"] for i in output if i.get("type") == "function_call_output"]
    assert calls == answers == [f"call_{n}" for n in range(TURNS)]
    assert len(row["_palaestra"]["producers"]) == len(output)
    assert row["_palaestra"]["model_calls"] == TURNS + 1
    assert row["_palaestra"]["tool_calls"] == TURNS


async def test_a_stopped_durable_collection_continues_each_rollout_mid_episode(
    tmp_path: Path,
) -> None:
    model = StallingModel(turns=2, extra=1)  # every rollout has done 2 turns, one of them 3
    first = asyncio.create_task(run(DurableLedger(), model, tmp_path, resume=False))
    await stop_when_stalled(first, model, lambda: sum(saved_turns(tmp_path).values()) == 9)
    assert rows(tmp_path / "out.jsonl") == []
    saved = rows(checkpoints_path(tmp_path / "out.jsonl"))
    assert sorted((r["task"], r["rollout"]) for r in saved) == [(t, 0) for t in range(TASKS)]
    assert sorted(saved_turns(tmp_path).values()) == [2, 2, 2, 3]

    summary = await run(DurableLedger(), FakeModel(ledger_script()), tmp_path, resume=True)

    assert summary.continued == TASKS and summary.failed == 0
    written = rows(tmp_path / "out.jsonl")
    assert len(written) == TASKS and all(r["reward"] == 1.0 for r in written)
    for row in written:
        assert_one_trajectory(row)
        resumed = row["_palaestra"]["resumed"]
        assert resumed["attempts"] == 2 and resumed["from_turn"] in (2, 3)
    assert_each_deposit_once(tmp_path)
    assert not checkpoints_path(tmp_path / "out.jsonl").exists()  # all finished: no file


async def test_a_restorable_rollout_keeps_its_policy_versions_and_token_fields(
    tmp_path: Path,
) -> None:
    model = StallingModel(turns=1)
    first = asyncio.create_task(run(DurableLedger(), model, tmp_path, resume=False))
    await stop_when_stalled(first, model, lambda: len(saved_turns(tmp_path)) == TASKS)
    saved = rows(checkpoints_path(tmp_path / "out.jsonl"))
    checkpoint = saved[-1]["checkpoint"]
    assert checkpoint["env_state"]["seq"] == checkpoint["turn"]
    assert checkpoint["response"]["output"][-1]["type"] == "function_call_output"


async def test_a_rollout_that_cannot_restore_restarts_as_before(tmp_path: Path) -> None:
    model = StallingModel(turns=2, extra=1)
    first = asyncio.create_task(run(RestartingLedger(), model, tmp_path, resume=False))
    await stop_when_stalled(first, model)
    assert not checkpoints_path(tmp_path / "out.jsonl").exists()

    summary = await run(RestartingLedger(), FakeModel(ledger_script()), tmp_path, resume=True)

    assert summary.continued == 0 and summary.done == TASKS
    written = rows(tmp_path / "out.jsonl")
    assert all("resumed" not in r["_palaestra"] for r in written)
    for row in written:
        assert_one_trajectory(row)
    ledger = ledger_lines(tmp_path / "ledger.jsonl")
    repeated = sum(n - 1 for n in Counter((r["task"], r["seq"]) for r in ledger).values())
    assert repeated == TASKS * 2 + 1  # every deposit of the lost attempts, again


def test_a_stale_attempt_cannot_write_its_checkpoint_or_its_record(tmp_path: Path) -> None:
    log = CheckpointLog(tmp_path / "c.jsonl")
    old = log.begin((0, 0))
    assert old.save({"turn": 1})
    new = log.begin((0, 0))  # a duplicate attempt of the same rollout supersedes the old one
    assert not old.save({"turn": 2, "stale": True})
    assert not log.current((0, 0), old.attempt)
    assert log.current((0, 0), new.attempt)
    assert new.save({"turn": 3})
    log.end((0, 0), old.attempt)  # the stale attempt cannot end the rollout either
    log.close()
    lines = rows(tmp_path / "c.jsonl")
    assert [line["checkpoint"]["turn"] for line in lines] == [3]
    assert lines[0]["epoch"] == new.attempt == 2
    assert log.fenced == 2


def test_a_resume_keeps_the_newest_checkpoint_and_numbers_attempts_past_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(
        b'{"task":0,"rollout":0,"epoch":1,"checkpoint":{"turn":1}}\n'
        b'{"task":0,"rollout":0,"epoch":3,"checkpoint":{"turn":4}}\n'
        b'{"task":0,"rollout":0,"epoch":2,"checkpoint":{"turn":9}}\n'  # stale: epoch 2 < 3
        b'{"task":1,"rollout":0,"epoch":1,"checkpoint":{"turn":2}}\n'
        b'{"task":1,"rollout":0,"epoch":1,"end":true}\n'
        b'{"task":2,"rollout":0,"epoch":1,"checkpoint":{"turn":2}}\n'
        b'{"task":3,"rollout":0,"epoch":1,"checkpo'  # torn by a kill
    )
    log = CheckpointLog.load(path, done={(2, 0)})
    assert [r["task"] for r in rows(path)] == [0]  # compacted to what can resume
    durability = log.begin((0, 0))
    assert durability.resume == {"turn": 4} and durability.attempt == 4
    assert log.begin((1, 0)).resume is None


async def test_the_collector_refuses_the_record_of_a_superseded_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An attempt superseded while it ran (a duplicate, an old worker back) writes nothing."""
    logs: list[CheckpointLog] = []
    load = CheckpointLog.load

    def remembered(path: Path, done: set[tuple[int, int]]) -> CheckpointLog:
        logs.append(load(path, done))
        return logs[-1]

    monkeypatch.setattr(collector_module.CheckpointLog, "load", remembered)

    class Superseded(BoundAgent):
        async def run(self, task: JsonDict, context: RolloutContext = NO_CONTEXT) -> AgentResult:
            result = await super().run(task, context)
            logs[-1].begin((task["_ng_task_index"], task["_ng_rollout_index"]))  # a newer one
            return result

    tasks = ledger_tasks(tmp_path / "tasks.jsonl", tmp_path / "ledger.jsonl", 2, 1)
    client = LocalEnvironmentClient(DurableLedger())
    runner = Superseded(ToolCallingAgent(), client, FakeModel(ledger_script()))
    try:
        summary = await collect(runner, CollectConfig(tasks, tmp_path / "out.jsonl"), Quiet())
    finally:
        await client.aclose()
    assert summary.fenced == 2 and summary.done == 0 and summary.failed == 0
    assert rows(tmp_path / "out.jsonl") == []


class BadExport(DurableLedger):
    def export_state(self, session: Session) -> JsonDict:
        return ["not", "an", "object"]  # type: ignore[return-value]


async def test_a_state_that_is_not_a_json_object_fails_its_rollout_as_env_error(
    tmp_path: Path,
) -> None:
    summary = await run(BadExport(), FakeModel(ledger_script()), tmp_path, resume=False)
    assert summary.failures == Counter({"env_error": TASKS})
    assert any("export_state returned list, not a JSON object" in r for r in summary.reasons)


class UnencodableExport(DurableLedger):
    def export_state(self, session: Session) -> JsonDict:
        return {"seen": {1, 2}}  # a set: a dict, but not JSON


async def test_a_state_that_json_cannot_hold_fails_its_rollout_as_env_error(
    tmp_path: Path,
) -> None:
    summary = await run(UnencodableExport(), FakeModel(ledger_script()), tmp_path, resume=False)
    assert summary.failures == Counter({"env_error": TASKS})
    assert any("export_state returned a state JSON cannot hold" in r for r in summary.reasons)


class StepLedger(StepEnvironment):
    """A turn-based ledger: each step deposits its number; the episode ends after ``turns``."""

    seed = DurableLedger.seed
    export_state = DurableLedger.export_state
    restore_state = DurableLedger.restore_state
    record = DurableLedger.record
    line = staticmethod(DurableLedger.line)

    def reset(self, session: Session) -> str:
        return "Deposit."

    def step(self, session: Session, action: str) -> StepResult:
        state = session.state
        self.record(state, state["seq"] + 1)
        state["seq"] += 1
        return StepResult("Again.", reward=0.5, terminated=state["seq"] == TURNS)


async def test_a_stopped_turn_based_episode_continues_from_its_last_step(tmp_path: Path) -> None:
    model = StallingModel(turns=2, extra=1, script=lambda params: say("deposit"))
    agent = StepAgent(max_steps=20)
    first = asyncio.create_task(run(StepLedger(), model, tmp_path, resume=False, agent=agent))
    await stop_when_stalled(first, model, lambda: sum(saved_turns(tmp_path).values()) == 9)

    again = FakeModel(lambda params: say("deposit"))
    summary = await run(StepLedger(), again, tmp_path, resume=True, agent=agent)

    assert summary.continued == TASKS and summary.failed == 0
    assert len(again.requests) == TASKS * TURNS - (TASKS * 2 + 1)  # no step taken twice
    for row in rows(tmp_path / "out.jsonl"):
        assert row["step_rewards"] == [0.5] * TURNS and row["reward"] == 0.5 * TURNS
        output = row["response"]["output"]
        assert len(output) == 2 * TURNS  # the first observation, then (action, observation)s
        assert row["_palaestra"]["resumed"]["attempts"] == 2
    assert_each_deposit_once(tmp_path)


async def test_a_turn_based_episode_stopped_before_its_first_step_is_not_reset_again(
    tmp_path: Path,
) -> None:
    model = StallingModel(turns=0, script=lambda params: say("deposit"))
    agent = StepAgent(max_steps=20)
    first = asyncio.create_task(run(StepLedger(), model, tmp_path, resume=False, agent=agent))
    await stop_when_stalled(first, model, lambda: len(saved_turns(tmp_path)) == TASKS)

    again = FakeModel(lambda params: say("deposit"))
    summary = await run(StepLedger(), again, tmp_path, resume=True, agent=agent)

    assert summary.continued == TASKS and summary.failed == 0
    assert len(again.requests) == TASKS * TURNS
    for row in rows(tmp_path / "out.jsonl"):
        assert row["reward"] == 0.5 * TURNS
        assert len(row["response"]["output"]) == 2 * TURNS  # the first observation once
        assert row["_palaestra"]["resumed"] == {"from_turn": 0, "attempts": 2}
    assert_each_deposit_once(tmp_path)


async def test_a_turn_is_checkpointed_by_its_own_items_and_resumed_from_them_whole(
    tmp_path: Path,
) -> None:
    """Each turn's line carries that turn's items, not the trajectory again (what made a
    checkpoint cost in proportion to the rollout); a resume folds them into the whole."""
    tasks = ledger_tasks(tmp_path / "tasks.jsonl", tmp_path / "ledger.jsonl", 1, TURNS)
    task = {**rows(tasks)[0], "_ng_task_index": 0, "_ng_rollout_index": 0}
    path = tmp_path / "c.jsonl"
    log = CheckpointLog(path)
    context = RolloutContext(log.begin((0, 0)))
    client = LocalEnvironmentClient(DurableLedger())
    agent = ToolCallingAgent(max_steps=20)
    result = await agent.run(task, client, FakeModel(ledger_script()), context)
    await client.aclose()
    await asyncio.sleep(0)  # the loop turn's lines are written
    written = [line["checkpoint"] for line in rows(path)]
    assert [len(part["items"]) for part in written] == [0] + [2] * TURNS
    assert "response" not in written[-1]

    resumed = CheckpointLog.load(path, done=set()).begin((0, 0)).resume
    assert resumed is not None and resumed["turn"] == TURNS
    assert result.response is not None and result.producers is not None
    assert resumed["response"]["output"] == result.response["output"][: 2 * TURNS]
    assert resumed["producers"] == result.producers[: 2 * TURNS]
    assert resumed["env_state"]["seq"] == TURNS

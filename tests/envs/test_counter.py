from __future__ import annotations

import asyncio

from palaestra import LocalEnvironmentClient, ToolCallingAgent
from palaestra.collection.tasks import read_tasks
from palaestra.environment.finding.registry import find_environment
from palaestra.envs.counter.environment import Counter
from palaestra.types import JsonDict
from tests.support.fake_model import FakeModel, call, outputs_so_far, response, say


def stepper(task: JsonDict) -> FakeModel:
    """Applies the task's increments one by one, yielding between steps."""

    def script(params: JsonDict) -> JsonDict:
        done = len(outputs_so_far(params))
        steps = task["increments"]
        if done < len(steps):
            return response(call("increment", f'{{"amount": {steps[done]}}}', f"c{done}"))
        return say("done")

    return FakeModel(script)


def tasks() -> list[JsonDict]:
    entry = find_environment("counter")
    assert entry.example_tasks is not None
    return [t.row for t in read_tasks(entry.example_tasks)]


async def test_concurrent_rollouts_keep_separate_counters() -> None:
    env = LocalEnvironmentClient(Counter())
    rows = tasks()
    assert len(rows) == 5
    results = await asyncio.gather(
        *(ToolCallingAgent().run(row, env, stepper(row)) for row in rows)
    )
    for row, result in zip(rows, results, strict=True):
        assert result.verdict is not None
        assert result.verdict.reward == 1.0
        assert result.verdict.metrics["final_value"] == row["target_value"]


async def test_wrong_final_value_scores_zero_with_distance() -> None:
    env = LocalEnvironmentClient(Counter())
    task = {**tasks()[1], "increments": [2]}  # stops 5 short of the target
    result = await ToolCallingAgent().run(task, env, stepper(task))
    assert result.verdict is not None and result.verdict.reward == 0.0
    assert result.verdict.metrics["distance"] == 5

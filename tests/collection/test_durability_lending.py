"""Which rollouts the collector lends a ``Durability``: those of a runner whose rollouts may
checkpoint (an in-process agent over a restorable environment, or a runner that does not say),
never those of a runner that says ``durable = False``."""

from __future__ import annotations

from pathlib import Path

import orjson

from palaestra import LocalEnvironmentClient
from palaestra.agents import BoundAgent, RolloutContext, RolloutRunner, ToolCallingAgent
from palaestra.agents.context import NO_CONTEXT
from palaestra.agents.durable import Durability
from palaestra.collection.collector import CollectConfig, collect
from palaestra.types import AgentResult, JsonDict, Verdict
from tests.collection.test_collector import Quiet
from tests.support.durable_ledger import DurableLedger, RestartingLedger
from tests.support.fake_model import FakeModel


class Recorder(RolloutRunner):
    """A runner that notes what each rollout was lent, and scores it 1."""

    def __init__(self, durable: bool | None) -> None:
        if durable is not None:
            self.durable = durable
        self.lent: list[Durability | None] = []

    async def check(self) -> None: ...

    async def run(self, task: JsonDict, context: RolloutContext = NO_CONTEXT) -> AgentResult:
        self.lent.append(context.durability)
        return AgentResult(response={"output": []}, verdict=Verdict(1.0))


async def _collect(runner: Recorder, tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    row = {"responses_create_params": {"input": "hi"}}
    tasks.write_bytes(b"".join(orjson.dumps(row) + b"\n" for _ in range(3)))
    summary = await collect(runner, CollectConfig(tasks, tmp_path / "out.jsonl"), Quiet())
    assert summary.done == 3


async def test_a_runner_that_says_it_cannot_checkpoint_is_lent_no_durability(
    tmp_path: Path,
) -> None:
    runner = Recorder(durable=False)
    await _collect(runner, tmp_path)
    assert runner.lent == [None, None, None]


async def test_a_runner_that_does_not_say_is_lent_a_durability_per_rollout(
    tmp_path: Path,
) -> None:
    runner = Recorder(durable=None)
    await _collect(runner, tmp_path)
    assert all(isinstance(lent, Durability) for lent in runner.lent)
    assert len({id(lent) for lent in runner.lent}) == 3


def test_an_agent_in_process_may_checkpoint_only_over_a_restorable_environment() -> None:
    model = FakeModel(lambda params: {})
    restorable = BoundAgent(ToolCallingAgent(), LocalEnvironmentClient(DurableLedger()), model)
    plain = BoundAgent(ToolCallingAgent(), LocalEnvironmentClient(RestartingLedger()), model)
    assert restorable.durable and not plain.durable

"""What a rollout's runner hands its agent (``RolloutContext``): an agent written from the
base class as the docs show checkpoints and resumes by its signature, and one written for the
old ``run(task, env, model)`` still runs, warned."""

from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path

import pytest

from palaestra import LocalEnvironmentClient
from palaestra.agents import Agent, BoundAgent, RolloutContext
from palaestra.agents.episode import Conversation, run_conversation
from palaestra.environment.running.client import EnvironmentClient
from palaestra.models.base import Model
from palaestra.types import AgentResult, JsonDict, Producer, function_call_output, function_calls
from tests.collection.test_durable import (
    TASKS,
    TURNS,
    StallingModel,
    assert_each_deposit_once,
    rows,
    run,
    saved_turns,
    stop_when_stalled,
)
from tests.support.durable_ledger import DurableLedger, ledger_script
from tests.support.fake_model import FakeModel


class DepositingAgent(Agent):
    """An agent as docs/agents.md writes one: its own tool loop over a ``Conversation``."""

    name = "depositing"

    async def run(
        self, task: JsonDict, env: EnvironmentClient, model: Model, context: RolloutContext
    ) -> AgentResult:
        async def turns(conversation: Conversation) -> None:
            while conversation.result.model_calls < 20:
                response = await conversation.ask(model)
                calls = function_calls(response)
                if not calls:
                    return
                for call in calls:
                    arguments = json.loads(call["arguments"])
                    output = await env.call_tool(conversation.session_id, call["name"], arguments)
                    conversation.add(function_call_output(call["call_id"], output), Producer.TOOL)
                conversation.result.tool_calls += len(calls)
                await conversation.checkpoint()  # a turn boundary

        return await run_conversation(task, env, context, turns)


async def test_an_agent_written_from_the_base_class_checkpoints_and_resumes(
    tmp_path: Path,
) -> None:
    model = StallingModel(turns=2)  # every rollout makes 2 turns, then the run is stopped
    first = asyncio.create_task(
        run(DurableLedger(), model, tmp_path, resume=False, agent=DepositingAgent())
    )
    await stop_when_stalled(first, model, lambda: sum(saved_turns(tmp_path).values()) == 8)
    assert sorted(saved_turns(tmp_path).values()) == [2] * TASKS

    summary = await run(
        DurableLedger(), FakeModel(ledger_script()), tmp_path, resume=True, agent=DepositingAgent()
    )

    assert summary.continued == TASKS and summary.failed == 0
    written = rows(tmp_path / "out.jsonl")
    assert len(written) == TASKS and all(r["reward"] == 1.0 for r in written)
    for row in written:
        assert row["_palaestra"]["resumed"] == {"from_turn": 2, "attempts": 2}
        assert row["_palaestra"]["model_calls"] == TURNS + 1
    assert_each_deposit_once(tmp_path)  # the turns made before the stop were not made again


class OldSignature:
    """An agent written before the context: ``run(task, env, model)``."""

    name = "old"

    async def run(self, task: JsonDict, env: EnvironmentClient, model: Model) -> AgentResult:
        return await DepositingAgent().run(task, env, model, RolloutContext())


async def test_an_agent_with_the_old_signature_still_runs_with_a_deprecation_warning(
    tmp_path: Path,
) -> None:
    with pytest.warns(DeprecationWarning, match=r"OldSignature's run\(task, env, model\)"):
        summary = await run(
            DurableLedger(),
            FakeModel(ledger_script()),
            tmp_path,
            resume=False,
            agent=OldSignature(),
        )
    assert summary.done == TASKS and summary.failed == 0
    assert all(r["reward"] == 1.0 for r in rows(tmp_path / "out.jsonl"))


def test_an_agent_that_takes_the_context_is_not_warned() -> None:
    client = LocalEnvironmentClient(DurableLedger())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bound = BoundAgent(DepositingAgent(), client, FakeModel(ledger_script()))
    assert bound.takes_context and bound.durable

"""Environments reach the pool through ``Environment.run_in_pool``; the client owns it."""

from __future__ import annotations

import pytest

from palaestra import Environment, LocalEnvironmentClient, Session, Verdict, output_text, tool
from palaestra.agents import SingleTurnAgent, ToolCallingAgent
from palaestra.errors import ConfigError
from palaestra.types import FailureKind, JsonDict
from tests.sandbox import pool_tasks
from tests.sandbox.conftest import leftovers
from tests.support.fake_model import FakeModel, call, outputs_so_far, response, say


class Checked(Environment):
    """Answers checked in the worker pool."""

    pool_workers = 1

    async def verify(self, session: Session, response: JsonDict) -> Verdict:
        expected = session.task["expected_answer"]
        reward = await self.run_in_pool(pool_tasks.score, output_text(response), expected)
        return Verdict(reward=reward)

    @tool
    async def check(self, answer: str) -> str:
        """Check an answer."""
        return str(await self.run_in_pool(pool_tasks.score, answer, "4"))


def task(expected: str = "4") -> JsonDict:
    return {"responses_create_params": {"input": "2+2?"}, "expected_answer": expected}


async def test_verify_runs_in_the_pool_which_starts_on_first_use_and_stops_on_aclose() -> None:
    before = set(leftovers())
    client = LocalEnvironmentClient(Checked())
    session = await client.seed(task())
    assert set(leftovers()) == before  # no pool until something needs it
    assert (await client.verify(session, task(), say("4"))).reward == 1.0
    assert len(set(leftovers()) - before) == 1  # pool_workers = 1
    assert await client.call_tool(session, "check", {"answer": "5"}) == "0.0"
    await client.close(session)
    await client.aclose()  # and the leak check finds no worker left


async def test_a_client_whose_environment_never_uses_the_pool_starts_nothing() -> None:
    before = set(leftovers())
    client = LocalEnvironmentClient(Checked())
    await client.close(await client.seed(task()))
    await client.aclose()
    assert set(leftovers()) == before


async def test_a_worker_crash_is_a_failure_of_the_rollout_never_a_zero() -> None:
    client = LocalEnvironmentClient(Checked())
    try:
        verified = await SingleTurnAgent().run(task(), client, FakeModel(lambda _: say("crash")))
        assert verified.verdict is None and verified.failure is not None
        assert verified.failure.kind == FailureKind.WORKER_CRASH

        def script(params: JsonDict) -> JsonDict:
            if not outputs_so_far(params):
                return response(call("check", '{"answer": "crash"}'))
            return say("done")

        tooled = await ToolCallingAgent().run(task(), client, FakeModel(script))
        assert tooled.failure is not None and tooled.failure.kind == FailureKind.WORKER_CRASH
    finally:
        await client.aclose()


async def test_run_in_pool_outside_a_runner_says_what_to_do() -> None:
    with pytest.raises(ConfigError, match="LocalEnvironmentClient"):
        await Checked().run_in_pool(pool_tasks.add, 1, 2)

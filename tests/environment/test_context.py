"""palaestra.environment.context: what a runner lends an environment, once, through setup."""

from __future__ import annotations

import pytest

from palaestra import ConfigError, Environment, LocalEnvironmentClient, Session, Verdict
from palaestra.environment.context import EnvironmentContext
from palaestra.environment.judge import JudgeModels


class Recorder(Environment):
    def __init__(self) -> None:
        self.contexts: list[EnvironmentContext] = []

    def setup(self, context: EnvironmentContext) -> None:
        super().setup(context)
        self.contexts.append(context)

    def verify(self, session: Session, response: dict[str, object]) -> Verdict:
        return Verdict(reward=1.0)


def _double(x: int) -> int:
    return 2 * x


async def test_the_runner_lends_its_worker_pool_once_through_setup() -> None:
    env = Recorder()
    client = LocalEnvironmentClient(env)
    try:
        assert len(env.contexts) == 1 and env.context is env.contexts[0]
        assert await env.run_in_pool(_double, 21, timeout=30) == 42
    finally:
        await client.aclose()


async def test_outside_a_runner_run_in_pool_says_what_to_do() -> None:
    with pytest.raises(ConfigError, match="needs a worker pool: run the environment through"):
        await Recorder().run_in_pool(_double, 1)


async def test_a_judge_is_opened_once_per_environment_and_closed_with_it() -> None:
    judges = JudgeModels(None, "http://127.0.0.1:9/v1", "judge")
    context = EnvironmentContext()
    first = judges.use(context)
    assert judges.use(context) is first  # not a new client per verify
    await judges.aclose()
    assert judges.use(context) is not first  # closed: the next use opens anew
    await judges.aclose()

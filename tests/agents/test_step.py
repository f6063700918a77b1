from __future__ import annotations

from palaestra import LocalEnvironmentClient, Session
from palaestra.agents import StepAgent
from palaestra.environment.step import StepEnvironment
from palaestra.types import JsonDict, StepResult
from tests.support.fake_model import FakeModel, say

TASK: JsonDict = {"responses_create_params": {"input": "play"}}


class Endless(StepEnvironment):
    """Ends the episode only when the model says 'stop'."""

    def reset(self, session: Session) -> str:
        return "go on"

    def step(self, session: Session, action: str) -> StepResult:
        return StepResult("again", reward=1.0, terminated=action == "stop")


async def test_an_episode_cut_by_max_steps_is_marked_truncated() -> None:
    model = FakeModel(lambda params: say("more"))
    result = await StepAgent(max_steps=3).run(TASK, LocalEnvironmentClient(Endless()), model)
    assert result.failure is None and result.verdict is not None
    assert result.verdict.step_rewards == [1.0, 1.0, 1.0]
    assert result.truncated == "max_steps"


async def test_an_episode_the_environment_ends_on_the_last_step_is_not_truncated() -> None:
    model = FakeModel(lambda params: say("stop"))
    result = await StepAgent(max_steps=1).run(TASK, LocalEnvironmentClient(Endless()), model)
    assert result.verdict is not None and result.truncated is None

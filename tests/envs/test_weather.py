from __future__ import annotations

from palaestra import LocalEnvironmentClient, ToolCallingAgent
from palaestra.collection.tasks import read_tasks
from palaestra.environment.finding.registry import find_environment
from palaestra.envs.weather.environment import Weather
from tests.support.fake_model import FakeModel, call, outputs_so_far, response, say


def test_ships_five_valid_example_tasks() -> None:
    entry = find_environment("weather")
    assert entry.example_tasks is not None
    tasks = list(read_tasks(entry.example_tasks))
    assert len(tasks) == 5 and all(t.error is None for t in tasks)


async def test_tool_answers_and_reward_is_always_one() -> None:
    def script(params: dict[str, object]) -> dict[str, object]:
        if outputs_so_far(params):
            return say("It is cold.")
        return response(call("get_weather", '{"city": "Oslo"}'))

    env = LocalEnvironmentClient(Weather())
    task = {"responses_create_params": {"input": "Weather in Oslo?"}}
    result = await ToolCallingAgent().run(task, env, FakeModel(script))
    assert result.verdict is not None and result.verdict.reward == 1.0
    assert result.verdict.metrics == {"called_tool": True}
    tool_output = result.response["output"][1]["output"]  # type: ignore[index]
    assert "Oslo is cold" in tool_output

    silent = await ToolCallingAgent().run(task, env, FakeModel(lambda p: say("no idea")))
    assert silent.verdict is not None and silent.verdict.reward == 1.0
    assert silent.verdict.metrics == {"called_tool": False}

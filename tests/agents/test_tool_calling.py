from __future__ import annotations

import pytest

from palaestra import Environment, LocalEnvironmentClient, Session, tool
from palaestra.agents import SingleTurnAgent, ToolCallingAgent, make_agent
from palaestra.errors import ConfigError, ModelError
from palaestra.types import FailureKind, JsonDict
from tests.support.fake_model import FakeModel, call, outputs_so_far, response, say


class Notes(Environment):
    """Notes."""

    def seed(self, task: JsonDict) -> list[str]:
        return []

    @tool
    def note(self, session: Session, text: str) -> str:
        """Write a note."""
        session.state.append(text)
        return f"noted {len(session.state)}"

    @tool
    def broken(self) -> str:
        """Always breaks."""
        raise RuntimeError("disk on fire")

    def verify(self, session: Session, response: JsonDict) -> float:
        return float(len(session.state))


TASK: JsonDict = {"responses_create_params": {"input": "take notes", "temperature": 0.0}}


async def test_loop_runs_tools_feeds_outputs_back_and_sums_usage() -> None:
    def script(params: JsonDict) -> JsonDict:
        done = outputs_so_far(params)
        if len(done) < 2:
            return response(call("note", '{"text": "a"}', f"c{len(done)}"))
        return say("two notes taken")

    model = FakeModel(script)
    result = await ToolCallingAgent().run(TASK, LocalEnvironmentClient(Notes()), model)
    assert result.failure is None
    assert result.verdict is not None and result.verdict.reward == 2.0
    assert result.model_calls == 3 and result.tool_calls == 2
    assert result.response is not None
    kinds = [item["type"] for item in result.response["output"]]
    assert kinds == ["function_call", "function_call_output"] * 2 + ["message"]
    tool_output = result.response["output"][1]
    assert tool_output == {  # NeMo Gym's item, in its order, with an id of its own
        "call_id": "c0",
        "output": "noted 1",
        "type": "function_call_output",
        "id": tool_output["id"],
        "status": "completed",
    }
    assert list(tool_output)[3] == "id" and tool_output["id"].startswith("fco_")
    assert result.response["usage"]["total_tokens"] == 30
    # tools come from the environment when the task names none, and the input is replayed
    assert [t["name"] for t in model.requests[0]["tools"]] == ["note", "broken"]
    assert model.requests[2]["input"][0] == {
        "type": "message",
        "role": "user",
        "content": "take notes",
    }
    assert len(model.requests[2]["input"]) == 5
    assert {"seed", "model", "tools", "verify", "total"} <= set(result.timings)


async def test_invalid_json_and_unknown_tools_are_fed_back_to_the_model() -> None:
    answers = iter(
        [
            response(
                call("note", '{"text": ', "bad"),
                call("fly", "{}", "unknown"),
                call("note", '{"txt": "x"}', "wrongfield"),
            ),
            say("sorry"),
        ]
    )
    model = FakeModel(lambda params: next(answers))
    result = await ToolCallingAgent().run(TASK, LocalEnvironmentClient(Notes()), model)
    assert result.failure is None and result.verdict is not None
    outputs = {
        i["call_id"]: i["output"]
        for i in result.response["output"]  # type: ignore[index]
        if i["type"] == "function_call_output"
    }
    assert "not valid JSON" in outputs["bad"]
    assert "unknown tool 'fly'" in outputs["unknown"]
    assert "field 'text'" in outputs["wrongfield"]
    assert result.verdict.reward == 0.0


async def test_max_steps_bounds_a_model_that_never_stops_calling_tools() -> None:
    model = FakeModel(lambda params: response(call("note", '{"text": "again"}')))
    result = await ToolCallingAgent(max_steps=3).run(TASK, LocalEnvironmentClient(Notes()), model)
    assert result.model_calls == 3
    assert result.verdict is not None and result.verdict.reward == 3.0


async def test_incomplete_response_stops_the_loop() -> None:
    model = FakeModel(lambda params: response(call("note", '{"text": "x"}'), status="incomplete"))
    result = await ToolCallingAgent().run(TASK, LocalEnvironmentClient(Notes()), model)
    assert result.model_calls == 1 and result.tool_calls == 0
    assert result.verdict is not None


async def test_tool_crash_and_model_error_become_failures_and_close_the_session() -> None:
    env = LocalEnvironmentClient(Notes())
    crash = FakeModel(lambda params: response(call("broken", "{}")))
    result = await ToolCallingAgent().run(TASK, env, crash)
    assert result.failure is not None and result.failure.kind is FailureKind.TOOL_ERROR
    assert "disk on fire" in result.failure.reason
    assert result.verdict is None
    assert result.response is not None  # the trajectory so far is kept for debugging
    assert [i["type"] for i in result.response["output"]] == ["function_call"]

    def raise_model_error(params: JsonDict) -> JsonDict:
        raise ModelError("HTTP 500 after 3 retries")

    result = await ToolCallingAgent().run(TASK, env, FakeModel(raise_model_error))
    assert result.failure is not None and result.failure.kind is FailureKind.MODEL_ERROR
    assert len(env.sessions) == 0


async def test_single_turn_agent_calls_once_and_runs_no_tools() -> None:
    model = FakeModel(lambda params: response(call("note", '{"text": "x"}')))
    result = await SingleTurnAgent().run(TASK, LocalEnvironmentClient(Notes()), model)
    assert result.model_calls == 1 and result.tool_calls == 0
    assert result.verdict is not None and result.verdict.reward == 0.0


async def test_running_out_of_max_steps_while_the_model_still_calls_tools_is_marked() -> None:
    model = FakeModel(lambda params: response(call("note", '{"text": "again"}')))
    result = await ToolCallingAgent(max_steps=2).run(TASK, LocalEnvironmentClient(Notes()), model)
    assert result.model_calls == 2 and result.truncated == "max_steps"


async def test_a_model_that_stops_on_its_last_allowed_step_is_not_truncated() -> None:
    answers = iter([response(call("note", '{"text": "a"}')), say("done")])
    model = FakeModel(lambda params: next(answers))
    result = await ToolCallingAgent(max_steps=2).run(TASK, LocalEnvironmentClient(Notes()), model)
    assert result.model_calls == 2 and result.truncated is None


async def test_calls_beyond_max_calls_per_turn_are_answered_with_an_error_not_run() -> None:
    calls = [call("note", f'{{"text": "{n}"}}', f"c{n}") for n in range(5)]
    answers = iter([response(*calls), say("done")])
    model = FakeModel(lambda params: next(answers))
    agent = make_agent("tool_calling", max_calls_per_turn=2)
    result = await agent.run(TASK, LocalEnvironmentClient(Notes()), model)
    assert result.verdict is not None and result.verdict.reward == 2.0  # two notes were taken
    assert result.tool_calls == 2
    outputs = {
        i["call_id"]: i["output"]
        for i in result.response["output"]  # type: ignore[index]
        if i["type"] == "function_call_output"
    }
    assert sorted(outputs) == [f"c{n}" for n in range(5)]  # every call has its output
    assert outputs["c1"] == "noted 2"
    for skipped in ("c2", "c3", "c4"):
        assert outputs[skipped] == "Error: not executed: at most 2 calls per turn"


def test_the_default_cap_on_calls_per_turn_is_64() -> None:
    agent = make_agent("tool_calling")
    assert isinstance(agent, ToolCallingAgent) and agent.max_calls_per_turn == 64


def test_make_agent_with_an_unknown_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"unknown agent 'tool-calling'.*tool_calling"):
        make_agent("tool-calling")


class Exam(Notes):
    """Notes, handed in with ``hand_in`` (which ends the episode)."""

    @tool(ends_episode=True)
    def hand_in(self, session: Session, pages: int) -> str:
        """Hand the notes in."""
        session.state.append(f"handed in {pages}")
        return "handed in"


async def test_a_call_of_a_tool_that_ends_the_episode_is_the_last_the_model_is_asked_for() -> None:
    def script(params: JsonDict) -> JsonDict:
        done = outputs_so_far(params)
        if not done:
            return response(call("note", '{"text": "a"}', "c0"))
        if len(done) == 1:  # a refused hand-in (no pages) does not end it
            return response(call("hand_in", "{}", "c1"))
        if len(done) == 2:  # the calls after a hand-in in the same answer are not run
            return response(
                call("hand_in", '{"pages": 1}', "c2"), call("note", '{"text": "b"}', "c3")
            )
        return response(call("note", '{"text": "late"}', f"c{len(done)}"))  # never asked

    model = FakeModel(script)
    env = LocalEnvironmentClient(Exam())
    assert env.ending_tools == frozenset({"hand_in"})
    result = await ToolCallingAgent(max_steps=10).run(TASK, env, model)
    assert result.failure is None and result.truncated is None
    assert len(model.requests) == 3 and result.tool_calls == 3
    assert result.verdict is not None and result.verdict.reward == 2.0  # "a", "handed in 1"
    assert result.response is not None
    outputs = [item["output"] for item in outputs_so_far({"input": result.response["output"]})]
    assert outputs[1].startswith("Error: invalid arguments for tool 'hand_in'")
    assert outputs[2:] == ["handed in", "Error: not executed: it came after 'hand_in'"]

"""The tool-calling agent with a simulated user: the conversation goes on until the user is done."""

from __future__ import annotations

from palaestra import Environment, LocalEnvironmentClient, Session, tool
from palaestra.agents import ToolCallingAgent
from palaestra.environment.users import UserTurn
from palaestra.errors import ModelError
from palaestra.types import FailureKind, JsonDict, message_text
from tests.environment.test_users import Answering
from tests.support.fake_model import FakeModel, call, response, say
from tests.support.user_envs import Interview, ModelInterview

TASK: JsonDict = {"responses_create_params": {"input": "hello"}, "turns": ["book it", "thanks"]}


def user_texts(params: JsonDict) -> list[str]:
    return [
        str(item["content"])
        for item in params["input"]
        if item.get("type") == "message" and item.get("role") == "user"
    ]


async def test_a_scripted_user_is_heard_turn_by_turn_until_it_is_done() -> None:
    def script(params: JsonDict) -> JsonDict:
        heard = user_texts(params)
        if heard[-1] == "book it" and params["input"][-1].get("type") == "message":
            return response(call("note", '{"text": "booked"}', "c1"))
        return say(f"ok after {len(heard)}")

    model = FakeModel(script)
    result = await ToolCallingAgent().run(TASK, LocalEnvironmentClient(Interview()), model)
    assert result.failure is None and result.truncated is None
    assert result.verdict is not None and result.verdict.reward == 1.0
    assert [user_texts(r) for r in model.requests] == [
        ["hello"],
        ["hello", "book it"],
        ["hello", "book it"],
        ["hello", "book it", "thanks"],
    ]
    assert result.model_calls == 4 and result.tool_calls == 1 and result.user_turns == 2
    assert result.response is not None
    output = result.response["output"]
    assert result.producers == ["policy", "user", "policy", "tool", "policy", "user", "policy"]
    assert len(output) == len(result.producers)
    assert (output[1]["role"], message_text(output[1])) == ("user", "book it")
    assert "user" in result.timings


async def test_the_step_budget_cuts_a_conversation_the_user_would_go_on_with() -> None:
    model = FakeModel(lambda params: say("hm"))
    task = {**TASK, "turns": ["a", "b", "c", "d"]}
    agent = ToolCallingAgent(max_steps=2)
    result = await agent.run(task, LocalEnvironmentClient(Interview()), model)
    assert result.truncated == "max_steps" and result.model_calls == 2
    assert result.verdict is not None and result.verdict.reward == 0.0


async def test_the_user_turn_budget_ends_a_conversation_as_truncated() -> None:
    model = FakeModel(lambda params: say("hm"))
    task = {**TASK, "turns": ["a", "b", "c", "d"]}
    agent = ToolCallingAgent(max_user_turns=2)
    result = await agent.run(task, LocalEnvironmentClient(Interview()), model)
    assert result.truncated == "max_user_turns"
    assert result.user_turns == 2 and result.model_calls == 3


async def test_a_failing_user_model_fails_the_rollout_as_user_model_error_with_no_score() -> None:
    user_model = Answering(error=ModelError("connection refused"))
    env = LocalEnvironmentClient(ModelInterview(), user_model=user_model)
    task = {"responses_create_params": {"input": "hi"}, "persona": "You are Ana."}
    result = await ToolCallingAgent().run(task, env, FakeModel(lambda params: say("hello")))
    assert result.verdict is None
    assert result.failure is not None and result.failure.kind == FailureKind.USER_MODEL_ERROR
    assert "connection refused" in result.failure.reason
    assert result.response is not None and len(result.response["output"]) == 1  # kept so far


async def test_a_model_user_talks_through_the_run_user_model_until_its_stop_signal() -> None:
    user_model = Answering("I want a flight.", "Great, DONE")
    env = LocalEnvironmentClient(ModelInterview(), user_model=user_model)
    task = {"responses_create_params": {"input": "hi"}, "persona": "You are Ana."}
    result = await ToolCallingAgent().run(task, env, FakeModel(lambda params: say("sure")))
    assert result.failure is None and result.user_turns == 2 and result.model_calls == 2
    assert user_model.requests[0]["instructions"] == "You are Ana."
    assert result.producers == ["policy", "user", "policy", "user"]


class BuggyUser(Environment):
    """Its user_turn has a bug."""

    def user_turn(self, session: Session, conversation: list[JsonDict]) -> UserTurn:
        raise KeyError("persona")

    def verify(self, session: Session, response: JsonDict) -> float:
        return 1.0


class WrongType(BuggyUser):
    """Its user_turn answers a string."""

    def user_turn(self, session: Session, conversation: list[JsonDict]) -> UserTurn:
        return "hello"  # type: ignore[return-value]


async def test_a_bug_in_user_turn_is_an_env_error_naming_where() -> None:
    model = FakeModel(lambda params: say("hi"))
    result = await ToolCallingAgent().run(TASK, LocalEnvironmentClient(BuggyUser()), model)
    assert result.failure is not None and result.failure.kind == FailureKind.ENV_ERROR
    assert "user_turn raised KeyError" in result.failure.reason
    assert "test_user_turns.py" in result.failure.reason
    result = await ToolCallingAgent().run(TASK, LocalEnvironmentClient(WrongType()), model)
    assert result.failure is not None and result.failure.kind == FailureKind.ENV_ERROR
    assert "not a UserTurn" in result.failure.reason


class Silent(Environment):
    """No user."""

    def verify(self, session: Session, response: JsonDict) -> float:
        return 1.0


async def test_an_environment_without_a_user_is_never_asked_for_a_turn() -> None:
    client = LocalEnvironmentClient(Silent())
    assert not client.has_user and LocalEnvironmentClient(Interview()).has_user

    async def never(session_id: str, conversation: list[JsonDict]) -> UserTurn | None:
        raise AssertionError("asked for a user turn")

    client.user_turn = never  # type: ignore[method-assign]
    result = await ToolCallingAgent().run(TASK, client, FakeModel(lambda params: say("bye")))
    assert result.failure is None and result.model_calls == 1 and result.producers == ["policy"]


class SteppedInterview(Interview):
    """An interview whose ``next`` hands the word back to the user (a step ends)."""

    @tool(ends_episode=True)
    def next(self) -> str:
        """Say this part is done."""
        return "done with this part"


async def test_a_tool_that_ends_the_episode_gives_the_user_the_word_until_it_is_done() -> None:
    def script(params: JsonDict) -> JsonDict:
        return response(call("next", "{}", f"c{len(params['input'])}"))  # always "next"

    model = FakeModel(script)
    env = LocalEnvironmentClient(SteppedInterview())
    result = await ToolCallingAgent(max_steps=10).run(TASK, env, model)
    assert result.failure is None and result.truncated is None
    assert [user_texts(r) for r in model.requests] == [
        ["hello"],
        ["hello", "book it"],
        ["hello", "book it", "thanks"],
    ]  # after each "next" the user spoke; after its last turn the model was not asked again
    assert result.user_turns == 2 and result.tool_calls == 3
    assert result.verdict is not None and result.verdict.reward == 1.0

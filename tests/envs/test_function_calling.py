from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from palaestra import LocalEnvironmentClient, SingleTurnAgent, ToolCallingAgent
from palaestra.agents.oracle import NoModel, NullAgent, OracleAgent
from palaestra.collection.generated import write_generated_tasks
from palaestra.collection.tasks import read_tasks
from palaestra.environment.finding.registry import find_environment
from palaestra.envs.function_calling.compare import check_calls
from palaestra.envs.function_calling.data import convert_function, load_tasks, tool_name
from palaestra.envs.function_calling.environment import FunctionCalling
from palaestra.errors import ConfigError
from palaestra.types import FailureKind, JsonDict, Verdict
from tests.support.fake_model import FakeModel, call, response, say

needs_bfcl = pytest.mark.skipif(
    importlib.util.find_spec("bfcl_eval") is None, reason="bfcl-eval is not installed"
)

FUNCTIONS = [
    {
        "name": "math.power",
        "description": "Raise a number to a power.",
        "parameters": {
            "type": "dict",
            "properties": {
                "base": {"type": "integer", "description": "The base."},
                "exponent": {"type": "float", "description": "The exponent."},
                "exact": {"type": "boolean", "description": "Exact?", "default": False},
                "unit": {"type": "string", "description": "Unit label."},
                "point": {
                    "type": "dict",
                    "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                },
                "tags": {"type": "tuple", "items": {"type": "string"}},
                "extra": {"type": "any"},
            },
            "required": ["base", "exponent"],
        },
    }
]
TOOLS = [convert_function(FUNCTIONS[0], tool_name(FUNCTIONS[0]["name"]))]
EXPECTED = [
    {
        "name": "math_power",
        "arguments": {
            "base": [2],
            "exponent": [3.0],
            "exact": ["", False],
            "unit": ["", "Square Metres"],
            "point": ["", {"x": [1], "y": ["", 0]}],
            "tags": ["", ["a", "b"]],
        },
    }
]


def fc(name: str, arguments: object, call_id: str = "c") -> JsonDict:
    raw = arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()
    return call(name, raw, call_id)


def score(*calls: JsonDict, expected: list[JsonDict] | None = None) -> Verdict:
    task = {
        "responses_create_params": {"input": "q", "tools": TOOLS},
        "expected_calls": EXPECTED if expected is None else expected,
        "category": "test",
    }

    class _Session:
        pass

    session: Any = _Session()
    session.task = task
    return FunctionCalling().verify(session, response(*calls))


def test_schema_conversion_names_types_and_strict() -> None:
    tool = TOOLS[0]
    assert tool["name"] == "math_power" and tool["type"] == "function"
    props = tool["parameters"]["properties"]
    assert tool["parameters"]["type"] == "object"
    assert props["exponent"]["type"] == "number"
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["point"]["type"] == "object" and props["point"]["additionalProperties"] is False
    assert "type" not in props["extra"]
    assert tool["strict"] is False  # optional parameters: not strict-compatible
    closed = {"name": "f", "parameters": {"type": "dict", "properties": {"a": {"type": "string"}}}}
    closed["parameters"]["required"] = ["a"]  # type: ignore[index]
    assert convert_function(closed, "f")["strict"] is True
    assert tool_name("a.b", taken={"a_b"}) == "a_b_2"


def test_right_answers_score_one() -> None:
    assert score(fc("math_power", {"base": 2, "exponent": 3})).reward == 1.0
    full = {
        "base": 2,
        "exponent": 3.0,
        "exact": False,
        "unit": "square metres",  # case and spaces do not matter for strings
        "point": {"x": 1},
        "tags": ["A", "b"],
    }
    verdict = score(fc("math_power", full))
    assert verdict.reward == 1.0 and verdict.metrics["mismatch"] == ""


def test_parallel_calls_match_in_any_order_but_each_only_once() -> None:
    expected = [
        {"name": "math_power", "arguments": {"base": [2], "exponent": ["", 3.0]}},
        {"name": "math_power", "arguments": {"base": [2], "exponent": [3.0]}},
    ]
    both, first_only = (
        fc("math_power", {"base": 2, "exponent": 3}, "1"),
        fc("math_power", {"base": 2}, "2"),
    )
    # "both" fits either slot, "first_only" only the first: a greedy pairing would fail
    assert score(both, first_only, expected=expected).reward == 1.0
    assert score(first_only, both, expected=expected).reward == 1.0
    assert score(both, both, expected=expected).reward == 1.0
    assert score(first_only, first_only, expected=expected).reward == 0.0  # one fits two slots
    verdict = score(both, expected=expected)
    assert verdict.reward == 0.0 and verdict.metrics["mismatch"] == "made 1 call(s), expected 2"


@pytest.mark.parametrize(
    "arguments",
    [
        {"base": "2", "exponent": 3},  # a string for an integer
        {"base": 2.0, "exponent": 3},  # a float for an integer
        {"base": True, "exponent": 3},  # a boolean is not an integer
        {"base": 2, "exponent": "3"},
        {"base": 2, "exponent": 3, "exact": "false"},  # a string for a boolean
        {"base": 2, "exponent": 3, "exact": 0},
        {"base": 2, "exponent": 3, "unit": 5},
        {"base": 2, "exponent": 3, "tags": ["b", "a"]},  # arrays are ordered
        {"base": 2, "exponent": 3, "tags": "a, b"},
        {"base": 2, "exponent": 3, "point": {"x": 1, "z": 2}},  # a field the spec lacks
        {"base": 2, "exponent": 3, "point": {"y": 0}},  # the required x is missing
        {"base": 2, "exponent": 3, "extra": 1},  # an argument the expected call lacks
        {"base": 3, "exponent": 3},
        {"exponent": 3},
    ],
)
def test_wrong_arguments_score_zero(arguments: JsonDict) -> None:
    verdict = score(fc("math_power", arguments))
    assert verdict.reward == 0.0
    assert verdict.metrics["mismatch"] == "right function(s), wrong arguments"


def test_wrong_function_and_no_call_score_zero_and_no_call_can_be_right() -> None:
    assert score(fc("power", {"base": 2, "exponent": 3})).reward == 0.0
    assert score(say("2 to the 3 is 8")).reward == 0.0
    assert score(say("None of these functions fit."), expected=[]).reward == 1.0
    verdict = score(fc("math_power", {"base": 2, "exponent": 3}), expected=[])
    assert verdict.reward == 0.0 and verdict.metrics["num_calls"] == 1


@pytest.mark.parametrize(
    "raw",
    ['{"base": 2, "exponent":', "[2, 3]", '"base=2"', "null", "{'base': 2}", "\x00"],
)
def test_malformed_arguments_score_zero(raw: str) -> None:
    verdict = score(fc("math_power", raw))
    assert verdict.reward == 0.0 and verdict.metrics["mismatch"].startswith("malformed")


def test_hostile_answers_score_zero_quickly_and_never_raise() -> None:
    started = time.perf_counter()
    deep = '{"base": 2, "exponent": 3, "extra": ' + "[" * 5000 + "]" * 5000 + "}"
    assert score(fc("math_power", deep)).reward == 0.0
    nested = {"base": 2, "exponent": 3, "point": {"x": 1}}
    cursor: JsonDict = nested["point"]  # type: ignore[assignment]
    for _ in range(200):  # deeper than any spec: never matches, no RecursionError
        cursor["x"] = {"x": 1}
        cursor = cursor["x"]
    assert score(fc("math_power", nested)).reward == 0.0
    huge = '{"base": 2, "exponent": 3, "unit": "' + "x" * 2_000_000 + '"}'
    assert score(fc("math_power", huge)).reward == 0.0
    big = '{"base": 1' + "0" * 400 + ', "exponent": 3}'
    assert score(fc("math_power", big)).reward == 0.0
    parsed = {**fc("math_power", ""), "arguments": {"base": 10**400, "exponent": 10**400}}
    assert score(parsed).reward == 0.0  # already-parsed arguments, ints beyond float range
    flood = [fc("math_power", {"base": 2, "exponent": 3}, str(i)) for i in range(10_000)]
    assert score(*flood).reward == 0.0
    odd = {"type": "function_call", "name": None, "arguments": 7}
    assert score(odd).metrics["mismatch"].startswith("malformed")
    assert score("not an item", fc("math_power", {"base": 2, "exponent": 3})).reward == 1.0  # type: ignore[arg-type]
    assert time.perf_counter() - started < 5


def test_unusable_response_or_task_is_a_failure_not_zero() -> None:
    class _Session:
        task: JsonDict = {"responses_create_params": {"input": "q", "tools": TOOLS}}

    verdict = FunctionCalling().verify(_Session(), response())  # type: ignore[arg-type]
    assert verdict.failure is not None and verdict.failure.kind == FailureKind.INVALID_INPUT
    _Session.task = {**_Session.task, "expected_calls": EXPECTED}
    verdict = FunctionCalling().verify(_Session(), {"output": "nope"})  # type: ignore[arg-type]
    assert verdict.failure is not None and verdict.failure.kind == FailureKind.MODEL_ERROR


def example_tasks() -> list[JsonDict]:
    entry = find_environment("function_calling")
    assert entry.example_tasks is not None
    lines = list(read_tasks(entry.example_tasks))
    assert all(line.error is None for line in lines)
    return [line.row for line in lines]


def test_five_example_tasks_cover_the_categories() -> None:
    tasks = example_tasks()
    assert len(tasks) == 5
    assert {t["category"] for t in tasks} == {
        "simple_python",
        "multiple",
        "parallel",
        "parallel_multiple",
        "irrelevance",
    }
    for task in tasks:
        for tool in task["responses_create_params"]["tools"]:
            assert "." not in tool["name"] and isinstance(tool["strict"], bool)


async def test_only_the_first_answer_counts_under_the_tool_calling_agent() -> None:
    task = next(t for t in example_tasks() if t["category"] == "parallel")
    right = [
        fc("math_factorial", {"number": n}, str(n)) for n in reversed((5, 10, 15))
    ]  # reversed: order does not matter

    def script(params: JsonDict) -> JsonDict:
        answered = [i for i in params["input"] if i.get("type") == "function_call_output"]
        return response(*right) if not answered else response(fc("math_factorial", {"number": 1}))

    env = LocalEnvironmentClient(FunctionCalling())
    result = await ToolCallingAgent(max_steps=2).run(task, env, FakeModel(script))
    assert result.verdict is not None and result.verdict.reward == 1.0
    outputs = [i["output"] for i in result.response["output"] if "output" in i]  # type: ignore[index]
    assert outputs and all("unknown tool" in o for o in outputs)
    single = await SingleTurnAgent().run(task, env, FakeModel(lambda p: response(*right[:2])))
    assert single.verdict is not None and single.verdict.reward == 0.0
    assert single.model_calls == 1


def canonical_answer(spec: JsonDict, schema: JsonDict) -> JsonDict:
    """The first accepted value of every required argument, in the schema's type."""
    properties = schema.get("properties") or {}
    answer = {}
    for key, accepted in spec.items():
        if "" in accepted:
            continue
        answer[key] = _typed(accepted[0], properties.get(key, {}))
    return answer


def _typed(value: Any, schema: JsonDict) -> Any:
    if isinstance(value, dict) and all(isinstance(v, list) for v in value.values()):
        return canonical_answer(value, schema)
    if schema.get("type") == "string" and not isinstance(value, str) and value is not None:
        return str(value)
    if isinstance(value, list):
        return [_typed(v, schema.get("items") or {}) for v in value]
    return value


@needs_bfcl
def test_every_bfcl_task_is_answerable_by_its_canonical_answer() -> None:
    tasks = list(load_tasks())
    assert len(tasks) > 2500
    for task in tasks:
        tools = task["responses_create_params"]["tools"]
        schemas = {t["name"]: t["parameters"] for t in tools}
        calls = [
            fc(e["name"], canonical_answer(e["arguments"], schemas[e["name"]]))
            for e in task["expected_calls"]
        ]
        check = check_calls(calls, task["expected_calls"], tools)
        assert check.ok, (task["bfcl_id"], check.reason)


@needs_bfcl
async def test_the_oracle_scores_1_on_every_bfcl_task_and_doing_nothing_0() -> None:
    client = LocalEnvironmentClient(FunctionCalling())
    missed, rewarded, acting = [], [], 0
    for task in load_tasks():
        oracle = await OracleAgent().run(task, client, NoModel())
        if oracle.verdict is None or oracle.failure is not None or oracle.verdict.reward != 1:
            missed.append(task["bfcl_id"])
        if task["expected_calls"]:
            acting += 1
            null = await NullAgent().run(task, client, NoModel())
            if null.verdict is None or null.verdict.reward != 0:
                rewarded.append(task["bfcl_id"])
    await client.aclose()
    assert (missed, rewarded) == ([], [])
    assert acting > 2300  # irrelevance tasks expect no call: refusing is right there


def test_gold_actions_leave_out_what_may_be_left_out_and_follow_the_schema() -> None:
    tool = {
        "name": "find",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unisex": {"type": "string"},
                "rooms": {"type": "array", "items": {"type": "object"}},
            },
        },
    }
    expected = [
        {
            "name": "find",
            "arguments": {
                "city": ["Oslo", "oslo"],
                "unisex": [True],
                "venue": ["", "home"],
                "rooms": [[{"beds": [2, 3], "view": ["", "sea"]}]],
            },
        }
    ]
    task = {"expected_calls": expected, "responses_create_params": {"tools": [tool]}}
    assert FunctionCalling().gold_actions(task) == [
        [{"name": "find", "arguments": {"city": "Oslo", "unisex": "True", "rooms": [{"beds": 2}]}}]
    ]
    assert FunctionCalling().gold_actions({"responses_create_params": {}}) is None


@needs_bfcl
def test_generated_tasks_are_seeded_and_bounded(tmp_path: Path) -> None:
    env = FunctionCalling()
    written = write_generated_tasks(env, count=30, seed=1, path=tmp_path / "t.jsonl")
    assert len(written.read_bytes().splitlines()) == 30
    first = [t["bfcl_id"] for t in env.generate_tasks(20, seed=3)]
    assert first == [t["bfcl_id"] for t in env.generate_tasks(20, seed=3)]
    assert first != [t["bfcl_id"] for t in env.generate_tasks(20, seed=4)]
    assert len(set(first)) == 20
    with pytest.raises(ConfigError, match="asked for 100000"):
        list(env.generate_tasks(100_000, seed=0))

from __future__ import annotations

import json
from typing import Any

import pytest

from palaestra import LocalEnvironmentClient, Session, SingleTurnAgent
from palaestra.collection.tasks import read_tasks, task_problem
from palaestra.environment.finding.registry import find_environment
from palaestra.envs.structured_outputs.documents import FORMATS, strict_schema
from palaestra.envs.structured_outputs.environment import StructuredOutputs, check_answer
from palaestra.types import FailureKind, JsonDict, assistant_message
from tests.support.fake_model import FakeModel, say

BOOK = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "year": {"type": "integer"},
        "rating": {"type": "number"},
        "in_print": {"type": "boolean"},
        "genres": {"type": "array", "items": {"type": "string"}},
        "author": {"type": "object", "properties": {"name": {"type": "string"}}},
    },
}
ROWS = {"type": "array", "items": {"type": "object", "properties": BOOK["properties"]}}

RIGHT = {
    "json": '{"title": "Dune", "year": 1965, "rating": 4.5, "in_print": true, '
    '"genres": ["sf"], "author": {"name": "Herbert"}}',
    "yaml": "title: Dune\nyear: 1965\nrating: 4.5\nin_print: true\ngenres: [sf]\n"
    "author:\n  name: Herbert\n",
    "toml": 'title = "Dune"\nyear = 1965\nrating = 4.5\nin_print = true\ngenres = ["sf"]\n'
    '[author]\nname = "Herbert"\n',
    "xml": "<book><title>Dune</title><year>1965</year><rating>4.5</rating>"
    "<in_print>true</in_print><genres><item>sf</item><item>epic</item></genres>"
    "<author><name>Herbert</name></author></book>",
}


def task(fmt: str, schema: JsonDict = BOOK, **extra: Any) -> JsonDict:
    return {"schema": schema, "format": fmt, **extra}


@pytest.mark.parametrize("fmt", sorted(RIGHT))
def test_a_right_document_in_each_format_scores_one(fmt: str) -> None:
    assert check_answer(task(fmt), RIGHT[fmt]) == {"error_type": "none", "error": "", "format": fmt}
    fenced = f"Here it is:\n```{fmt}\n{RIGHT[fmt]}\n```"
    assert check_answer(task(fmt), fenced)["error_type"] == "none"


@pytest.mark.parametrize(
    "answer",
    [
        f"Here it is: ```json\n{RIGHT['json']}\n```",  # the fence after prose on its line
        f"~~~json\n{RIGHT['json']}\n~~~",  # a tilde fence
        f"```json\n{RIGHT['json']}",  # the closing fence cut off
        f"```json\n{RIGHT['json']}```",  # the closing fence at the end of the last line
        f"{{draft}}</think>\n{RIGHT['json']}",  # reasoning opened by the chat template
    ],
)
async def test_a_document_in_a_sloppy_fence_or_after_reasoning_is_read(answer: str) -> None:
    response = {"output": [assistant_message(answer)]}
    result = await StructuredOutputs().verify(Session("s", task("json"), {}), response)
    assert (result.reward, result.metrics["error_type"]) == (1.0, "none")


def test_csv_rows_are_read_against_the_item_schema() -> None:
    schema = {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "year": {"type": "integer"},
                "note": {"type": ["string", "null"]},
            },
        },
    }
    good = 'title,year,note\nDune,1965,\n"Emma, a novel",1815,classic\n'
    assert check_answer(task("csv", schema), good)["error_type"] == "none"
    bad = "title,year,note\nDune,soon,\n"
    result = check_answer(task("csv", schema), bad)
    assert result["error_type"] == "schema_error"
    assert result["error"] == "0/year: 'soon' is not of type 'integer'"


@pytest.mark.parametrize(
    ("fmt", "answer", "error_type"),
    [
        ("json", '{"title": "Dune", "year": "1965"', "parse_error"),
        ("json", "", "no_answer"),
        ("yaml", "title: [unclosed", "parse_error"),
        ("yaml", "a: &x [1, 2]\nb: *x\n", "parse_error"),
        ("toml", "title = Dune", "parse_error"),
        ("xml", "<book><title>Dune</book>", "parse_error"),
        ("csv", "title,year\nDune,1965,extra\n", "parse_error"),
        ("json", RIGHT["json"].replace("1965", '"1965"'), "schema_error"),
        ("json", RIGHT["json"].replace('"rating": 4.5, ', ""), "schema_error"),
        ("json", RIGHT["json"].replace('{"title', '{"isbn": "1", "title'), "schema_error"),
        ("xml", RIGHT["xml"].replace("true", "maybe"), "schema_error"),
        ("toml", RIGHT["toml"].replace("1965", '"1965"'), "schema_error"),
    ],
)
def test_wrong_and_malformed_documents_score_zero_with_their_error_type(
    fmt: str, answer: str, error_type: str
) -> None:
    assert check_answer(task(fmt), answer)["error_type"] == error_type


def test_strict_mode_requires_every_property_and_forbids_extras_at_every_level() -> None:
    strict = strict_schema(ROWS)
    item = strict["items"]
    assert item["additionalProperties"] is False
    assert item["required"] == sorted(BOOK["properties"])
    assert item["properties"]["author"]["required"] == ["name"]
    assert "required" not in ROWS["items"]  # the task's own schema is not modified
    missing = RIGHT["json"].replace(', "author": {"name": "Herbert"}', "")
    assert check_answer(task("json"), missing)["error_type"] == "schema_error"
    assert check_answer(task("json", strict=False), missing)["error_type"] == "none"


@pytest.mark.parametrize(
    "bad",
    [task("markdown"), {"format": "json"}, task("json", {"type": "object", "required": 3})],
)
async def test_a_malformed_task_is_an_invalid_input_failure(bad: JsonDict) -> None:
    env = LocalEnvironmentClient(StructuredOutputs())
    row = {"responses_create_params": {"input": "x"}, **bad}
    result = await SingleTurnAgent().run(row, env, FakeModel(lambda p: say("{}")))
    assert result.verdict is not None and result.verdict.failure is not None
    assert result.verdict.failure.kind == FailureKind.INVALID_INPUT


async def test_verdict_metrics_through_an_agent() -> None:
    env = LocalEnvironmentClient(StructuredOutputs())
    row = {"responses_create_params": {"input": "x"}, **task("json")}
    right = await SingleTurnAgent().run(row, env, FakeModel(lambda p: say(RIGHT["json"])))
    assert right.verdict is not None and right.verdict.reward == 1.0
    assert right.verdict.metrics["error_type"] == "none"
    thinking = "<think>{not json}</think>" + RIGHT["json"]
    again = await SingleTurnAgent().run(row, env, FakeModel(lambda p: say(thinking)))
    assert again.verdict is not None and again.verdict.reward == 1.0
    wrong = await SingleTurnAgent().run(row, env, FakeModel(lambda p: say("I can't")))
    assert wrong.verdict is not None and wrong.verdict.reward == 0.0
    assert wrong.verdict.metrics["error_type"] == "parse_error"


def sample(schema: JsonDict) -> Any:
    """A value that satisfies the generator's schemas (they use only these keywords)."""
    kind = schema["type"]
    if "enum" in schema:
        return schema["enum"][-1]
    if kind == "object":
        return {name: sample(sub) for name, sub in schema["properties"].items()}
    if kind == "array":
        return [sample(schema["items"]) for _ in range(schema.get("minItems", 2))]
    if kind == "string":
        return {"^[A-Z]{3}-[0-9]{4}$": "ABC-1234"}.get(schema.get("pattern", ""), "a@b.c")
    if kind == "boolean":
        return False
    return schema.get("minimum", 7) + (1 if "exclusiveMinimum" in schema else 0)


def written(value: Any, fmt: str, root: str) -> str:
    """``value`` written the way the generated prompt asks for ``fmt``."""
    if fmt in ("json", "yaml"):
        return json.dumps(value)  # JSON is valid YAML
    if fmt == "toml":
        scalars = {k: v for k, v in value.items() if not isinstance(v, dict)}
        tables = {k: v for k, v in value.items() if isinstance(v, dict)}
        lines = [f"{k} = {json.dumps(v)}" for k, v in scalars.items()]
        for name, table in tables.items():
            lines += [f"[{name}]", *(f"{k} = {json.dumps(v)}" for k, v in table.items())]
        return "\n".join(lines)
    if fmt == "csv":
        header = list(value[0])
        return "\n".join([",".join(header)] + [",".join(str(r[h]) for h in header) for r in value])

    def element(tag: str, item: Any) -> str:
        if isinstance(item, dict):
            inner = "".join(element(k, v) for k, v in item.items())
        elif isinstance(item, list):
            inner = "".join(element("item", v) for v in item)
        else:
            inner = json.dumps(item).strip('"')
        return f"<{tag}>{inner}</{tag}>"

    return element(root, value)


def test_generator_is_deterministic_covers_every_format_and_its_tasks_are_solvable() -> None:
    env = StructuredOutputs()
    rows = list(env.generate_tasks(60, seed=3))
    assert rows == list(env.generate_tasks(60, seed=3))
    assert rows != list(env.generate_tasks(60, seed=4))
    assert {r["format"] for r in rows} == set(FORMATS)
    for row in rows:
        assert task_problem(row) is None
        prompt = row["responses_create_params"]["input"][0]["content"]
        assert json.dumps(row["schema"], indent=2) in prompt
        root = prompt.split("root element named <")[-1].split(">")[0]
        answer = written(sample(row["schema"]), row["format"], root)
        assert check_answer(row, answer)["error_type"] == "none", (row["format"], answer)


def test_example_tasks_are_valid_and_one_per_format() -> None:
    entry = find_environment("structured_outputs")
    assert entry.example_tasks is not None
    rows = [t.row for t in read_tasks(entry.example_tasks)]
    assert [r["format"] for r in rows] == list(FORMATS)
    for row in rows:
        assert check_answer(row, "")["error_type"] == "no_answer"

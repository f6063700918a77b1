from __future__ import annotations

import orjson

from palaestra import LocalEnvironmentClient, ToolCallingAgent
from palaestra.collection.tasks import read_tasks
from palaestra.environment.finding.registry import find_environment
from palaestra.envs.synonyms.environment import THESAURUS, Synonyms
from palaestra.types import JsonDict
from tests.support.fake_model import FakeModel, call, outputs_so_far, response, say


def solver(order: list[str] | None = None) -> FakeModel:
    """Looks every word up, then submits the answers (optionally in a given order)."""

    def script(params: JsonDict) -> JsonDict:
        user = next(i for i in params["input"] if i.get("role") == "user")
        words = user["content"].removeprefix("Words: ").split(", ")
        answers = [o["output"] for o in outputs_so_far(params)]
        if len(answers) < len(words):
            word = words[len(answers)]
            return response(
                call("get_synonym", orjson.dumps({"word": word}).decode(), f"c{len(answers)}")
            )
        if len(answers) == len(words):
            chosen = [answers[i] for i in order] if order else answers
            return response(call("submit", orjson.dumps({"synonyms": chosen}).decode(), "s"))
        return say("done")

    return FakeModel(script)


def tasks() -> list[JsonDict]:
    entry = find_environment("synonyms")
    assert entry.example_tasks is not None
    return [t.row for t in read_tasks(entry.example_tasks)]


def test_example_tasks_are_consistent_with_the_thesaurus() -> None:
    rows = tasks()
    assert len(rows) == 5
    for row in rows:
        assert [THESAURUS[w] for w in row["words"]] == row["expected_synonyms"]


async def test_ordered_submission_scores_one_and_wrong_order_zero() -> None:
    env = LocalEnvironmentClient(Synonyms())
    task = next(r for r in tasks() if len(r["words"]) == 2)
    right = await ToolCallingAgent().run(task, env, solver())
    assert right.verdict is not None and right.verdict.reward == 1.0
    assert right.verdict.metrics == {"submitted": True, "lookups": 2}
    wrong = await ToolCallingAgent().run(task, env, solver(order=[1, 0]))
    assert wrong.verdict is not None and wrong.verdict.reward == 0.0


async def test_unknown_word_is_told_to_the_model() -> None:
    env = LocalEnvironmentClient(Synonyms())
    session = await env.seed({})
    from palaestra.errors import ToolCallRejected

    try:
        await env.call_tool(session, "get_synonym", {"word": "zebra"})
    except ToolCallRejected as rejected:
        assert "no synonym known for 'zebra'" in str(rejected)
    else:
        raise AssertionError("an unknown word must be rejected")

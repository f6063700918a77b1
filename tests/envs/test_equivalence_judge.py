from __future__ import annotations

from collections.abc import Callable

import pytest

from palaestra import LocalEnvironmentClient, SingleTurnAgent
from palaestra.collection.tasks import read_tasks, task_problem
from palaestra.environment.finding.registry import find_environment
from palaestra.environment.judge import JudgeFailure, parse_label
from palaestra.environment.sessions import Session
from palaestra.envs.equivalence_judge.environment import EquivalenceJudge
from palaestra.errors import ModelError
from palaestra.types import FailureKind, JsonDict, Verdict, assistant_message
from tests.support.fake_model import FakeModel, say
from tests.support.scripted_model import ScriptedModelServer, text_response

TASK = {"question": "What is the capital of Australia?", "expected_answer": "Canberra"}


def judge_saying(*replies: str) -> FakeModel:
    answers = iter(replies)
    return FakeModel(lambda params: say(next(answers)))


async def verdict(judge: FakeModel, answer: str, task: JsonDict = TASK) -> Verdict:
    env = EquivalenceJudge(judge=judge)
    return await env.verify(Session("s", task, {}), {"output": [assistant_message(answer)]})


async def test_reward_only_when_both_orders_say_equivalent() -> None:
    judge = judge_saying("VERDICT: EQUIVALENT", "verdict: equivalent")
    right = await verdict(judge, "It's canberra.")
    assert right.failure is None and right.reward == 1.0
    assert right.metrics == {
        "answer_found": True,
        "judge_labels": "EQUIVALENT,EQUIVALENT",
        "judge_agreed": True,
    }
    first, second = (r["input"][1]["content"] for r in judge.requests)
    assert "Question:\nWhat is the capital of Australia?" in first
    assert first.index("Canberra") < first.index("It's canberra.")  # reference first ...
    assert second.index("It's canberra.") < second.index("Canberra")  # ... then swapped
    assert all(r["temperature"] == 0.0 for r in judge.requests)

    split = await verdict(judge_saying("VERDICT: EQUIVALENT", "VERDICT: DIFFERENT"), "Sydney")
    assert (split.reward, split.metrics["judge_agreed"]) == (0.0, False)
    wrong = await verdict(judge_saying("VERDICT: DIFFERENT", "VERDICT: DIFFERENT"), "Sydney")
    assert (wrong.reward, wrong.metrics["judge_labels"]) == (0.0, "DIFFERENT,DIFFERENT")


async def test_an_empty_answer_is_zero_without_asking_the_judge() -> None:
    judge = judge_saying()
    result = await verdict(judge, "<think>Canberra?</think>  ")
    assert (result.reward, result.metrics) == (0.0, {"answer_found": False})
    assert judge.requests == []


async def test_reasoning_alone_is_no_answer_however_it_is_marked() -> None:
    judge = judge_saying()
    for answer in ("Canberra?</think>\n", "<think>Canberra, I believe"):
        result = await verdict(judge, answer)
        assert (result.reward, result.metrics) == (0.0, {"answer_found": False})
    assert judge.requests == []


def _raise(params: JsonDict) -> JsonDict:
    raise ModelError("judge endpoint answered 500")


@pytest.mark.parametrize(
    "judge",
    [
        lambda: judge_saying("They look the same to me."),
        lambda: judge_saying("VERDICT: EQUIVALENT", "maybe"),
        lambda: FakeModel(_raise),
    ],
)
async def test_a_judge_failure_is_a_verifier_error_not_a_zero(
    judge: Callable[[], FakeModel],
) -> None:
    # not the reference's own text: the swapped prompt would be the same one, asked once
    result = await verdict(judge(), "It's Canberra.")
    assert result.failure is not None and result.failure.kind == FailureKind.VERIFIER_ERROR


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("VERDICT: EQUIVALENT", "EQUIVALENT"),
        ("Reasoning...\nVERDICT: **different**", "DIFFERENT"),
        ("VERDICT: DIFFERENT\nVERDICT: EQUIVALENT", "EQUIVALENT"),
        (" Equivalent. ", "EQUIVALENT"),
    ],
)
def test_verdict_labels(reply: str, label: str) -> None:
    assert parse_label(reply) == label


def test_a_reply_without_a_label_is_refused() -> None:
    with pytest.raises(JudgeFailure):
        parse_label("NOT EQUIVALENT at all")


async def test_a_malformed_task_is_invalid_input() -> None:
    result = await verdict(judge_saying(), "x", {"question": "q"})
    assert result.failure is not None and result.failure.kind == FailureKind.INVALID_INPUT


async def test_a_judge_named_by_url_is_reached_through_the_model_client() -> None:
    with ScriptedModelServer(lambda params: text_response("VERDICT: EQUIVALENT")) as server:

        class RemoteJudge(EquivalenceJudge):
            judge_model = server.url

        env = LocalEnvironmentClient(RemoteJudge())
        task = {"responses_create_params": {"input": "Capital of Australia?"}, **TASK}
        result = await SingleTurnAgent().run(task, env, FakeModel(lambda p: say("Canberra")))
        assert result.verdict is not None and result.verdict.reward == 1.0
        assert len(server.bodies("/v1/responses")) + len(server.bodies("/v1/chat/completions")) == 2


def test_generator_and_example_tasks() -> None:
    env = EquivalenceJudge()
    rows = list(env.generate_tasks(30, seed=2))
    assert rows == list(env.generate_tasks(30, seed=2))
    assert rows != list(env.generate_tasks(30, seed=3))
    for row in rows:
        assert task_problem(row) is None and row["expected_answer"].lstrip("-").isdigit()
    entry = find_environment("equivalence_judge")
    assert entry.example_tasks is not None
    examples = [t.row for t in read_tasks(entry.example_tasks)]
    assert len(examples) == 5
    assert all(
        r["question"] in r["responses_create_params"]["input"][0]["content"] for r in examples
    )

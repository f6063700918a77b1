from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from palaestra import LocalEnvironmentClient, SingleTurnAgent
from palaestra.collection.tasks import read_tasks, task_problem
from palaestra.environment.finding.registry import find_environment
from palaestra.envs._shared.boxed_math import DEFAULT_MIXTURE, symbolic_check
from palaestra.envs.math.environment import Math
from palaestra.envs.math.metrics import answer_metrics
from palaestra.types import FailureKind, JsonDict
from tests.cli.test_collect_cli import rows, run_cli
from tests.support.fake_model import FakeModel, say
from tests.support.scripted_model import ScriptedModelServer, text_response


def examples() -> list[JsonDict]:
    entry = find_environment("math")
    assert entry.example_tasks is not None
    return [t.row for t in read_tasks(entry.example_tasks)]


def judge_saying(*replies: str) -> FakeModel:
    answers = iter(replies)
    return FakeModel(lambda params: say(next(answers)))


@pytest.fixture
async def env() -> AsyncIterator[LocalEnvironmentClient]:
    client = LocalEnvironmentClient(Math())
    yield client
    await client.aclose()


async def run(env: LocalEnvironmentClient, task: JsonDict, text: str) -> dict[str, Any]:
    result = await SingleTurnAgent().run(task, env, FakeModel(lambda p: say(text)))
    assert result.failure is None and result.verdict is not None
    if result.verdict.failure is not None:
        return {"failure": result.verdict.failure.kind}
    return {"reward": result.verdict.reward, **result.verdict.metrics}


@pytest.mark.parametrize(
    ("expected", "answer", "equal"),
    [
        ("42", "42", True),
        ("\\frac{1}{2}", "0.5", True),
        ("$\\frac{1}{82}$", "1/82", True),
        ("2\\sqrt{2}", "\\sqrt{8}", True),
        ("x=3", "3", True),
        ("288", "289", False),
        ("\\frac{3}{8}", "\\frac{8}{3}", False),
        ("5", "five apples", False),
    ],
)
def test_symbolic_check(expected: str, answer: str, equal: bool) -> None:
    assert symbolic_check(expected, answer)["equal"] is equal


async def test_right_wrong_and_malformed_answers_in_the_worker_pool(
    env: LocalEnvironmentClient,
) -> None:
    task = examples()[3]  # expected \frac{3}{8}
    right = await run(env, task, "Three of eight outcomes: \\boxed{0.375}")
    assert right == {
        "reward": 1.0,
        "answer_found": True,
        "extracted_answer": "0.375",
        "symbolic_match": True,
        "judged": False,
    }
    wrong = await run(env, task, "\\boxed{\\frac{3}{8}} no, \\boxed{\\frac{1}{2}}")
    assert (wrong["reward"], wrong["extracted_answer"]) == (0.0, "\\frac{1}{2}")
    unboxed = await run(env, task, "The answer is 3/8.")
    assert (unboxed["reward"], unboxed["answer_found"]) == (0.0, False)
    thinking = await run(env, task, "<think>\\boxed{3/8}</think> I give up")
    assert thinking["answer_found"] is False
    assert (await run(env, {**task, "expected_answer": " "}, "\\boxed{1}")) == {
        "failure": FailureKind.INVALID_INPUT
    }


async def test_a_box_inside_reasoning_is_never_scored_however_the_reasoning_is_marked(
    env: LocalEnvironmentClient,
) -> None:
    task = examples()[3]  # expected \frac{3}{8}
    # The chat template opened <think> in the prompt: only the closing tag is generated.
    opened_by_template = await run(env, task, "So \\boxed{3/8}.</think> I give up")
    assert opened_by_template["answer_found"] is False
    # Cut off while reasoning: the answer was never given.
    cut_off = await run(env, task, "<think>maybe \\boxed{3/8}, let me check")
    assert cut_off["answer_found"] is False
    after = await run(env, task, "draft \\boxed{1}</think>\n\\boxed{3/8}")
    assert (after["reward"], after["extracted_answer"]) == (1.0, "3/8")


async def test_every_example_task_accepts_its_reference_answer(
    env: LocalEnvironmentClient,
) -> None:
    rows = examples()
    assert len(rows) == 5
    for row in rows:
        assert task_problem(row) is None
        assert (await run(env, row, f"\\boxed{{{row['expected_answer']}}}"))["reward"] == 1.0


async def test_the_judge_is_asked_only_when_the_symbolic_check_fails() -> None:
    judge = judge_saying("VERDICT: EQUIVALENT", "VERDICT: EQUIVALENT")
    client = LocalEnvironmentClient(Math(judge=judge))
    try:
        task = {**examples()[3], "use_judge": True}
        assert (await run(client, task, "\\boxed{3/8}"))["judged"] is False
        assert judge.requests == []
        judged = await run(client, task, "\\boxed{three eighths}")
        assert (judged["reward"], judged["symbolic_match"], judged["judged"]) == (1.0, False, True)
        assert judged["judge_labels"] == "EQUIVALENT,EQUIVALENT"
        assert "three eighths" in judge.requests[0]["input"][1]["content"]
    finally:
        await client.aclose()


@pytest.mark.parametrize(
    ("replies", "outcome"),
    [
        (("VERDICT: EQUIVALENT", "VERDICT: DIFFERENT"), {"reward": 0.0}),
        (("VERDICT: DIFFERENT", "VERDICT: DIFFERENT"), {"reward": 0.0}),
        (("I am not sure",), {"failure": FailureKind.VERIFIER_ERROR}),
    ],
)
async def test_the_judge_must_agree_in_both_orders_and_its_failure_is_not_a_zero(
    replies: tuple[str, ...], outcome: dict[str, Any]
) -> None:
    client = LocalEnvironmentClient(Math(judge=judge_saying(*replies)))
    try:
        result = await run(client, {**examples()[3], "use_judge": True}, "\\boxed{0.4}")
        assert {k: result[k] for k in outcome} == outcome
    finally:
        await client.aclose()


def test_generator_draws_gsm_symbolic_and_arithmetic_deterministically() -> None:
    env = Math()
    rows = list(env.generate_tasks(40, seed=4))
    assert rows == list(env.generate_tasks(40, seed=4))
    assert rows != list(env.generate_tasks(40, seed=5))
    sources = {r["source_dataset"] for r in rows}
    assert "gsm_symbolic" in sources and sources <= set(DEFAULT_MIXTURE)
    for row in rows:
        assert task_problem(row) is None
        assert "\\boxed{}" in row["responses_create_params"]["input"][0]["content"]
        assert symbolic_check(row["expected_answer"], row["expected_answer"])["equal"]


def test_majority_and_pass_at_k_over_extracted_answers() -> None:
    def rollout(task: int, index: int, answer: str | None, reward: float) -> JsonDict:
        return {
            "_ng_task_index": task,
            "_ng_rollout_index": index,
            "reward": reward,
            "answer_found": answer is not None,
            "extracted_answer": answer or "",
        }

    rows = [
        # task 0: the majority (1/2 == 0.5, two votes) is right, one rollout wrong
        rollout(0, 0, "\\frac{1}{2}", 1.0),
        rollout(0, 1, "0.5", 1.0),
        rollout(0, 2, "3", 0.0),
        # task 1: the one right answer is outvoted by a wrong one
        rollout(1, 0, "7", 1.0),
        rollout(1, 1, "8", 0.0),
        rollout(1, 2, "8", 0.0),
    ]
    metrics = answer_metrics(rows)
    assert metrics["tasks"] == 2 and metrics["k"] == 3
    assert metrics["majority@3"] == 0.5
    assert metrics["pass@3"] == 1.0
    assert metrics["pass@1"] == pytest.approx((2 / 3 + 1 / 3) / 2)


def test_collect_scores_in_the_worker_pool_of_a_real_cli_run(tmp_path: Path) -> None:
    """The pool starts and stops inside ``palaestra collect``; no reward is lost or faked."""
    with ScriptedModelServer(lambda params: text_response("So: \\boxed{255}")) as server:
        done = run_cli(
            "collect", "--env", "math", "--model", server.url, "--limit", "2",
            "--output", "m.jsonl", cwd=tmp_path, timeout=300,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    by_task = {r["_ng_task_index"]: r for r in rows(tmp_path / "m.jsonl")}
    assert by_task[0]["reward"] == 1.0 and by_task[0]["symbolic_match"] is True  # gold 255
    assert by_task[1]["reward"] == 0.0 and by_task[1]["extracted_answer"] == "255"
    assert rows(tmp_path / "m_failures.jsonl") == []

from __future__ import annotations

from fractions import Fraction

import orjson
import pytest

from palaestra import LocalEnvironmentClient, ToolCallingAgent, ToolError
from palaestra.authoring import check_environment_async
from palaestra.authoring.report import Status
from palaestra.collection.tasks import read_tasks
from palaestra.environment.finding.registry import find_environment
from palaestra.envs.calculator.environment import Calculator, evaluate, last_number
from palaestra.envs.calculator.problems import KINDS
from palaestra.types import JsonDict
from tests.support.fake_model import FakeModel, call, response, say


def tasks() -> list[JsonDict]:
    entry = find_environment("calculator")
    assert entry.example_tasks is not None
    return [t.row for t in read_tasks(entry.example_tasks)]


def solver(expression: str, answer: str) -> FakeModel:
    """Calls calculate with ``expression``, then says ``answer``."""

    def script(params: JsonDict) -> JsonDict:
        if params["input"][-1].get("role") == "user":  # the example before it has outputs too
            return response(call("calculate", f'{{"expression": "{expression}"}}', "c0"))
        return say(answer)

    return FakeModel(script)


async def rollout(task: JsonDict, model: FakeModel) -> JsonDict:
    result = await ToolCallingAgent().run(task, LocalEnvironmentClient(Calculator()), model)
    assert result.verdict is not None
    return {"reward": result.verdict.reward, **result.verdict.metrics}


def test_calculate_is_exact_and_refuses_anything_but_arithmetic() -> None:
    assert evaluate("347 * 29") == 10063
    assert evaluate("(1,200 - 45) / 7") == Fraction(1155, 7)
    assert evaluate("-0.1 + 0.2") == Fraction(1, 10)  # exact: no 0.30000000000000004
    for bad in ("__import__('os')", "2 ** 64", "8060 % 31", "x + 1", "1 / 0", "9" * 30, ""):
        with pytest.raises(ToolError):
            evaluate(bad)


def test_the_answer_is_the_last_number_of_the_final_message() -> None:
    assert last_number("The answer is 10,063.") == 10063
    assert last_number("65326 times 89 is 5718.") == 5718  # what it ends on, not what it saw
    assert last_number("It is -2.50") == Fraction(-5, 2)
    assert last_number("I do not know.") is None


async def test_the_right_number_scores_one_and_any_other_scores_zero() -> None:
    task = tasks()[2]  # What is 366 times 77?
    assert task["expected_answer"] == "28182"
    right = await rollout(task, solver("366 * 77", "The answer is 28,182."))
    assert right == {
        "reward": 1.0,
        "answered": True,
        "used_calculator": True,
        "given_answer": "28182",
    }
    wrong = await rollout(task, solver("366 + 77", "The answer is 443."))
    assert wrong["reward"] == 0.0 and wrong["given_answer"] == "443"
    close = await rollout(task, solver("366 * 77", "28182 is 366 times 77."))
    assert close["reward"] == 0.0  # the final number must be the answer


async def test_a_rollout_that_never_answers_scores_zero_as_unanswered() -> None:
    task = tasks()[0]
    looping = FakeModel(lambda params: response(call("calculate", '{"expression": "1 + 1"}')))
    result = await ToolCallingAgent(max_steps=3).run(
        task, LocalEnvironmentClient(Calculator()), looping
    )
    assert result.verdict is not None and result.verdict.reward == 0.0
    assert result.verdict.metrics["answered"] is False
    assert result.verdict.metrics["given_answer"] is None


async def test_the_golden_answers_and_the_oracle_score_one_and_doing_nothing_scores_zero() -> None:
    rows = tasks()
    assert sorted(row["kind"] for row in rows) == sorted(KINDS)  # one task of each kind
    report = await check_environment_async("calculator", smoke=None)
    for name in ("golden answers", "oracle", "null agent"):
        check = report.check(name)
        assert check.status is Status.PASS and check.details["tasks"] == 10, check.reason
    assert Calculator().gold_actions({"expected_answer": "3"}) is None  # a task of your own


def test_generated_tasks_are_repeatable_and_their_expression_gives_the_answer() -> None:
    env = Calculator()
    first, again = list(env.generate_tasks(300, 7)), list(env.generate_tasks(300, 7))
    assert first == again
    assert first != list(env.generate_tasks(300, 8))
    assert {row["kind"] for row in first} == set(KINDS)
    for row in first:
        expression = row["golden_response"][0]["arguments"]["expression"]
        assert evaluate(expression) == int(row["expected_answer"])
        assert int(row["expected_answer"]) >= 0
        params = row["responses_create_params"]
        assert params["temperature"] == 0.0
        assert params["input"][-1]["role"] == "user"


def test_every_task_starts_with_the_same_worked_example() -> None:
    heads = [row["responses_create_params"]["input"][:-1] for row in tasks()]
    assert all(head == heads[0] for head in heads)
    example = [item for item in heads[0] if item.get("type") == "function_call"]
    assert evaluate(orjson.loads(example[0]["arguments"])["expression"]) == 425
    assert heads[0][-1] == {"role": "assistant", "content": "The answer is 425."}

from __future__ import annotations

from typing import Any

import pytest

from palaestra import LocalEnvironmentClient, SingleTurnAgent
from palaestra.collection.tasks import read_tasks, task_problem
from palaestra.environment.finding.registry import find_environment
from palaestra.environment.sessions import Session
from palaestra.envs.mcqa.environment import MultipleChoice, last_boxed
from palaestra.types import FailureKind, JsonDict, Verdict, assistant_message
from tests.support.fake_model import FakeModel, say

OPTIONS = ["Venus", "Mars", "Jupiter", "Mercury"]


def grade(answer: str, mode: str = "strict_boxed", **fields: Any) -> Verdict:
    task = {"options": OPTIONS, "expected_answer": "B", "grading_mode": mode, **fields}
    return MultipleChoice().verify(Session("s", task, {}), {"output": [assistant_message(answer)]})


@pytest.mark.parametrize(
    ("mode", "answer", "reward", "extracted"),
    [
        ("strict_boxed", "Red means Mars. \\boxed{B}", 1.0, "B"),
        ("strict_boxed", "\\boxed{A} no wait \\boxed{ b }", 1.0, "B"),
        ("strict_boxed", "\\boxed{C}", 0.0, "C"),
        ("strict_boxed", "\\boxed{(B)}", 0.0, ""),  # strict: the bare letter only
        ("strict_boxed", "The answer is B.", 0.0, ""),
        ("strict_boxed", "\\boxed{E}", 0.0, ""),  # not an option
        ("lenient_boxed", "\\boxed{(B)}", 1.0, "B"),
        ("lenient_boxed", "\\boxed{\\text{B. Mars}}", 1.0, "B"),
        ("lenient_boxed", "\\boxed{mars}", 1.0, "B"),
        ("lenient_boxed", "\\boxed{Jupiter}", 0.0, "C"),
        ("lenient_boxed", "\\boxed{Pluto}", 0.0, ""),
        ("answer_colon", "Mars is red.\nAnswer: B", 1.0, "B"),
        ("answer_colon", "**Answer:** (b)", 1.0, "B"),
        ("answer_colon", "Answer: A\n...actually\nAnswer: D", 0.0, "D"),
        ("answer_colon", "The answer: is B", 0.0, ""),
        ("regex", "<ans>B</ans>", 1.0, "B"),
        ("regex", "<ans>Q</ans>", 0.0, ""),
        ("regex", "B", 0.0, ""),
    ],
)
def test_grading_modes_extract_the_letter(
    mode: str, answer: str, reward: float, extracted: str
) -> None:
    result = grade(answer, mode, answer_regex=r"<ans>(\w)</ans>")
    assert result.failure is None
    assert (result.reward, result.metrics["extracted_answer"]) == (reward, extracted)
    assert result.metrics["answer_found"] is bool(extracted)


def test_thinking_is_ignored_and_nested_braces_are_balanced() -> None:
    assert grade("<think>\\boxed{B}</think> \\boxed{A}").reward == 0.0
    assert last_boxed("x \\boxed{\\frac{1}{2}} y") == "\\frac{1}{2}"
    assert last_boxed("\\boxed{unclosed") is None


def test_a_box_in_reasoning_opened_by_the_template_or_cut_off_is_not_graded() -> None:
    assert grade("Maybe \\boxed{B}?</think> I cannot tell.").metrics["answer_found"] is False
    assert grade("<think>Maybe \\boxed{B}").metrics["answer_found"] is False


def test_the_last_answer_line_is_the_final_word_even_when_it_is_not_a_letter() -> None:
    superseded = grade("Answer: B\nOn reflection:\nAnswer: Jupiter, I think", "answer_colon")
    assert (superseded.reward, superseded.metrics["answer_found"]) == (0.0, False)
    assert grade("Answer:\n(B)", "answer_colon").reward == 1.0  # the value on the next line


def test_options_may_be_an_object_of_letters() -> None:
    task = {"options": {"a": "yes", "b": "no"}, "expected_answer": "b"}
    result = MultipleChoice().verify(
        Session("s", task, {}), {"output": [assistant_message("\\boxed{B}")]}
    )
    assert result.reward == 1.0


@pytest.mark.parametrize(
    "fields",
    [
        {"grading_mode": "psychic"},
        {"grading_mode": "regex"},  # no answer_regex
        {"grading_mode": "regex", "answer_regex": "(unclosed"},
        {"expected_answer": "F"},
        {"options": ["only one"]},
    ],
)
def test_malformed_tasks_are_invalid_input_failures(fields: JsonDict) -> None:
    task = {"options": OPTIONS, "expected_answer": "B", **fields}
    result = MultipleChoice().verify(Session("s", task, {}), {"output": []})
    assert result.failure is not None and result.failure.kind == FailureKind.INVALID_INPUT


def test_generator_is_deterministic_and_each_task_has_one_right_option() -> None:
    env = MultipleChoice()
    rows = list(env.generate_tasks(50, seed=11))
    assert rows == list(env.generate_tasks(50, seed=11))
    assert rows != list(env.generate_tasks(50, seed=12))
    kinds = {row["question"].split()[1] for row in rows}
    assert len(kinds) >= 4  # the question makers are all drawn
    for row in rows:
        assert task_problem(row) is None
        assert len(set(row["options"])) == 4 and row["grading_mode"] == "strict_boxed"
        letter = row["expected_answer"]
        right = row["options"][ord(letter) - ord("A")]
        assert _solve(row["question"], row["options"]) == right, row["question"]
        session = Session("s", row, {})
        verdict = env.verify(session, {"output": [assistant_message(f"\\boxed{{{letter}}}")]})
        assert verdict.reward == 1.0


def _solve(question: str, options: list[str]) -> str:
    """An independent solver for the generated question kinds."""
    from fractions import Fraction

    if question.startswith("What is "):
        a, symbol, b = question.removeprefix("What is ").rstrip("?").split()
        return str({"+": int(a) + int(b), "-": int(a) - int(b), "\u00d7": int(a) * int(b)}[symbol])
    if "prime" in question:
        return next(o for o in options if all(int(o) % d for d in range(2, int(o))))
    if "largest" in question:
        return max(options, key=Fraction)
    if "comes next" in question:
        numbers = [int(n) for n in question.split(": ")[1].split(", ...")[0].split(", ")]
        return str(2 * numbers[-1] - numbers[-2])
    letter, word = question.split("'")[1], question.split("'")[3]
    return str(word.count(letter))


async def test_example_tasks_cover_every_mode_and_grade_through_an_agent() -> None:
    entry = find_environment("mcqa")
    assert entry.example_tasks is not None
    rows = [t.row for t in read_tasks(entry.example_tasks)]
    assert len(rows) == 5
    assert {r["grading_mode"] for r in rows} == {
        "strict_boxed",
        "lenient_boxed",
        "answer_colon",
        "regex",
    }
    answers = {
        "strict_boxed": "\\boxed{{{}}}",
        "lenient_boxed": "\\boxed{{({})}}",
        "answer_colon": "Answer: {}",
        "regex": "<answer>{}</answer>",
    }
    env = LocalEnvironmentClient(MultipleChoice())
    for row in rows:
        reply = answers[row["grading_mode"]].format(row["expected_answer"])
        result = await SingleTurnAgent().run(row, env, FakeModel(lambda p, r=reply: say(r)))
        assert result.verdict is not None and result.verdict.reward == 1.0, row["question"]

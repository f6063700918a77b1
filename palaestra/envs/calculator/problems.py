"""calculator's problems: ten kinds of arithmetic question, each with the expression that solves it.

Each kind draws its numbers so that the answer is a whole number; the expression is the golden
call of ``calculate``. Some kinds need one operation the question names ("What is 734 times
89?"), others an operation the model must choose ("Sam has 150 apples and gives away 68") or
two operations in the right order — the ones a small model gets wrong.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from palaestra import JsonDict

SYSTEM_PROMPT = (
    "You are a careful assistant. Use the calculate function for arithmetic, "
    "then reply with the result."
)
"""The system message of every task row (``task_row``)."""

EXAMPLE: list[JsonDict] = [
    {"role": "user", "content": "What is 25 times 17?"},
    {
        "type": "function_call",
        "call_id": "call_example",
        "name": "calculate",
        "arguments": '{"expression":"25 * 17"}',
    },
    {"type": "function_call_output", "call_id": "call_example", "output": "425"},
    {"role": "assistant", "content": "The answer is 425."},
]
"""One worked exchange at the start of every task's conversation, after the system message:
call the tool, then answer in a sentence that ends with the number. Without it the 135M
embedded model never answers (it calls ``calculate`` until ``--max-steps``); with it, it
answers, right or wrong (see the README)."""

NAMES = ("Sam", "Ana", "Li", "Omar", "Mia", "Ravi")


@dataclass(frozen=True, slots=True)
class Problem:
    """A question, the expression that answers it and its value."""

    kind: str
    question: str
    expression: str
    answer: int


def _sum(rng: random.Random) -> Problem:
    a, b = rng.randint(100, 9999), rng.randint(10, 999)
    return Problem("sum", f"What is {a} plus {b}?", f"{a} + {b}", a + b)


def _difference(rng: random.Random) -> Problem:
    a, b = rng.randint(1000, 9999), rng.randint(10, 999)
    return Problem("difference", f"What is {a} minus {b}?", f"{a} - {b}", a - b)


def _product(rng: random.Random) -> Problem:
    a, b = rng.randint(101, 999), rng.randint(12, 99)
    return Problem("product", f"What is {a} times {b}?", f"{a} * {b}", a * b)


def _quotient(rng: random.Random) -> Problem:
    q, b = rng.randint(12, 400), rng.randint(6, 60)
    return Problem("quotient", f"What is {q * b} divided by {b}?", f"{q * b} / {b}", q)


def _three_terms(rng: random.Random) -> Problem:
    a, b, c = rng.randint(100, 999), rng.randint(100, 999), rng.randint(10, 99)
    question = f"What is the sum of {a}, {b} and {c}?"
    return Problem("three_terms", question, f"{a} + {b} + {c}", a + b + c)


def _product_plus(rng: random.Random) -> Problem:
    a, b, c = rng.randint(12, 99), rng.randint(11, 40), rng.randint(100, 999)
    question = f"What is {a} times {b}, plus {c}?"
    return Problem("product_plus", question, f"{a} * {b} + {c}", a * b + c)


def _minus_product(rng: random.Random) -> Problem:
    b, c = rng.randint(12, 60), rng.randint(3, 9)
    a = rng.randint(b * c + 100, b * c + 2000)
    question = f"What is {a} minus {b} times {c}?"
    return Problem("minus_product", question, f"{a} - {b} * {c}", a - b * c)


def _boxes(rng: random.Random) -> Problem:
    a, b = rng.randint(6, 48), rng.randint(12, 90)
    question = f"A box holds {a} pens. How many pens are in {b} boxes?"
    return Problem("boxes", question, f"{a} * {b}", a * b)


def _gives_away(rng: random.Random) -> Problem:
    name, a = rng.choice(NAMES), rng.randint(60, 500)
    b = rng.randint(11, a - 10)
    question = f"{name} has {a} apples and gives away {b}. How many apples are left?"
    return Problem("gives_away", question, f"{a} - {b}", a - b)


def _percent(rng: random.Random) -> Problem:
    j, k = rng.randint(1, 19), rng.randint(2, 60)  # 5j percent of 20k is jk
    question = f"What is {5 * j} percent of {20 * k}?"
    return Problem("percent", question, f"{5 * j} * {20 * k} / 100", j * k)


KINDS: dict[str, Callable[[random.Random], Problem]] = {
    "sum": _sum,
    "difference": _difference,
    "product": _product,
    "quotient": _quotient,
    "three_terms": _three_terms,
    "product_plus": _product_plus,
    "minus_product": _minus_product,
    "boxes": _boxes,
    "gives_away": _gives_away,
    "percent": _percent,
}
"""The generator's kinds of problem, drawn with equal weight."""


def problem(rng: random.Random) -> Problem:
    """One problem of a kind drawn from ``KINDS``."""
    return KINDS[rng.choice(list(KINDS))](rng)


def task_row(item: Problem) -> JsonDict:
    """The task row for ``item``: system message, the worked example, then the question.

    Temperature 0 so that a run is repeatable. ``expression`` solves it (the gold action);
    the golden answer calls ``calculate`` with it and states the result; the wrong one states
    the result plus one.
    """
    return {
        "responses_create_params": {
            "input": [
                {"role": "system", "content": SYSTEM_PROMPT},
                *EXAMPLE,
                {"role": "user", "content": item.question},
            ],
            "temperature": 0.0,
        },
        "kind": item.kind,
        "expression": item.expression,
        "expected_answer": str(item.answer),
        "golden_response": [
            _call(item.expression),
            {"type": "message", "role": "assistant", "content": f"The answer is {item.answer}."},
        ],
        "wrong_response": [
            _call(item.expression),
            {
                "type": "message",
                "role": "assistant",
                "content": f"The answer is {item.answer + 1}.",
            },
        ],
    }


def _call(expression: str) -> JsonDict:
    return {"type": "function_call", "name": "calculate", "arguments": {"expression": expression}}

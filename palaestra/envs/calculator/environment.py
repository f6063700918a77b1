"""calculator: arithmetic with a calculator tool, scored on the number the final answer gives.

The quickstart's environment. The model gets a question ("What is 347 times 29?") and a
``calculate(expression)`` tool; the rollout's reward is 1 only when its final answer states
the exact result. A small model gets some right and some wrong (it loops on the tool, copies
the wrong number, or answers before calculating), so its first run shows a verifier that
discriminates, not a constant.
"""

from __future__ import annotations

import ast
import operator
import random
import re
from collections.abc import Callable, Iterator
from fractions import Fraction

from palaestra import Environment, JsonDict, Session, ToolError, Verdict, tool
from palaestra.envs.calculator.problems import problem, task_row

MAX_EXPRESSION = 200
"""Longest expression ``calculate`` evaluates, in characters."""
MAX_MAGNITUDE = 10**15
"""Largest absolute value ``calculate`` computes: keeps a tool call cheap and bounded."""

_BINARY: dict[type[ast.operator], Callable[[Fraction, Fraction], Fraction]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
# A number as people write it: optional sign, digits with optional thousands commas, decimals.
_NUMBER = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?")


class Calculator(Environment):
    """Arithmetic questions with a calculate tool; reward 1 when the final answer is exact."""

    name = "calculator"

    @tool
    async def calculate(self, expression: str) -> str:
        """Evaluate an arithmetic expression and return its exact value.

        Args:
            expression: Numbers with + - * / and parentheses, e.g. "347 * 29".
        """
        return format_number(evaluate(expression))

    async def verify(self, session: Session, response: JsonDict) -> Verdict:
        expected = Fraction(str(session.task["expected_answer"]))
        answer = final_answer(response)
        given = None if answer is None else last_number(answer)
        called = any(
            item.get("type") == "function_call" and item.get("name") == "calculate"
            for item in response.get("output", [])
        )
        return Verdict(
            reward=1.0 if given == expected else 0.0,
            metrics={
                "answered": answer is not None,
                "used_calculator": called,
                "given_answer": None if given is None else format_number(given),
            },
        )

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]] | None:
        """Calculate the task's ``expression``, then say the result; None without one."""
        expression = task.get("expression")
        if not isinstance(expression, str):
            return None
        answer = f"The answer is {task['expected_answer']}."
        call = {"name": "calculate", "arguments": {"expression": expression}}
        return [[call, {"role": "assistant", "content": answer}]]

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        """Problems of ten kinds, drawn with equal weight (``problems.KINDS``); same seed,
        same tasks."""
        rng = random.Random(seed)
        for _ in range(count):
            yield task_row(problem(rng))


def evaluate(expression: str) -> Fraction:
    """The exact value of ``expression`` (numbers, + - * /, parentheses); ToolError if not one."""
    if len(expression) > MAX_EXPRESSION:
        raise ToolError(f"expression longer than {MAX_EXPRESSION} characters")
    try:
        tree = ast.parse(expression.replace(",", "").strip(), mode="eval")
    except SyntaxError:
        raise ToolError(f"not an arithmetic expression: {expression!r}") from None
    return _value(tree.body)


def _value(node: ast.expr) -> Fraction:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        value = Fraction(str(node.value))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _value(node.operand)
        value = -inner if isinstance(node.op, ast.USub) else inner
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _value(node.left), _value(node.right)
        if isinstance(node.op, ast.Div) and right == 0:
            raise ToolError("division by zero")
        value = _BINARY[type(node.op)](left, right)
    else:
        raise ToolError(f"only numbers, + - * / and parentheses: not {ast.unparse(node)!r}")
    if abs(value) > MAX_MAGNITUDE:
        raise ToolError("result too large")
    return value


def format_number(value: Fraction) -> str:
    """``value`` as the tool prints it: an integer, else a decimal (at most 10 places)."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):.10f}".rstrip("0").rstrip(".")


def final_answer(response: JsonDict) -> str | None:
    """The text of the rollout's last item when it is an assistant message; None otherwise
    (the rollout ended on a tool call: it never answered)."""
    output = response.get("output") or []
    if not output or output[-1].get("type") != "message":
        return None
    content = output[-1].get("content", [])
    if isinstance(content, str):
        return content
    return "".join(
        str(part.get("text", "")) for part in content if part.get("type") in ("output_text", "text")
    )


def last_number(text: str) -> Fraction | None:
    """The last number written in ``text`` ("10,063" is 10063), exact; None when there is none."""
    found = _NUMBER.findall(text)
    return Fraction(found[-1].replace(",", "")) if found else None

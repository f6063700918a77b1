"""arithmetic: add two small numbers, answer as ``<answer>N</answer>`` (the learning demo's task).

A format and a simple skill that a 135M model can learn by RL on a CPU in minutes. Reward:
0.5 when the answer is the right sum, plus 0.5 when it is between ``<answer>`` tags. The
answer is the content of the last ``<answer>`` tags, failing that the last number in the reply
(so a right sum without the format still earns half: SmolLM2-135M almost never writes the tags
unprompted, and GRPO learns nothing from a group whose rewards are all 0). Metrics:
``answer_found`` (tags) and ``correct``. Tasks come from a generator::

    palaestra collect --env examples/arithmetic.py --num-tasks 50 --seed 1
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

from palaestra import (
    Environment,
    JsonDict,
    Session,
    Verdict,
    last_tagged,
    output_text,
    strip_reasoning,
    task_row,
)

SYSTEM = "You are a helpful assistant."
QUESTION = "What is {a} + {b}? Put the final answer between <answer> and </answer> tags."
_NUMBER = re.compile(r"-?\d+")


class Arithmetic(Environment):
    """Add two numbers; answer between <answer> tags."""

    name = "arithmetic"

    def __init__(self, low: int = 1, high: int = 20) -> None:
        self.low, self.high = low, high

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        rng = random.Random(seed)
        for _ in range(count):
            a, b = rng.randint(self.low, self.high), rng.randint(self.low, self.high)
            yield task_row(QUESTION.format(a=a, b=b), system=SYSTEM, expected_answer=a + b)

    async def verify(self, session: Session, response: JsonDict) -> Verdict:
        text = strip_reasoning(output_text(response))
        answer = last_tagged(text)
        found = answer is not None
        if answer is None:
            numbers = _NUMBER.findall(text)
            answer = numbers[-1] if numbers else None
        correct = answer == str(session.task["expected_answer"])
        return Verdict(
            reward=0.5 * found + 0.5 * correct,
            reward_components={"format": float(found), "correct": float(correct)},
            metrics={"answer_found": found, "correct": correct},
        )

"""An LLM judge of answer equivalence, shared by ``equivalence_judge`` and ``math``.

The judge sees the question and two answers and must reply with one line, ``VERDICT:
EQUIVALENT`` or ``VERDICT: DIFFERENT``. Asked in both orders (the reference first, then the
candidate first), the answers count as equivalent only when both replies say so. A reply
without a verdict label, or a judge model that fails, is a ``JudgeFailure``: the rollout cannot
be scored, which is not the same as a wrong answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from palaestra.environment.context import EnvironmentContext
from palaestra.errors import ModelError, VerifierFailure
from palaestra.models.base import Model
from palaestra.types import JsonDict, output_text

EQUIVALENT = "EQUIVALENT"
DIFFERENT = "DIFFERENT"
JUDGE_INSTRUCTIONS = (
    "You compare two answers to the same question. Decide whether they give the same final "
    "answer. Ignore wording, formatting, capitalisation, the order of items where order does "
    "not matter, equivalent notations (0.5 and 1/2) and any explanation around the final "
    "answer. Reply with exactly one line: 'VERDICT: EQUIVALENT' if the final answers are the "
    "same, or 'VERDICT: DIFFERENT' if they are not."
)
JUDGE_PROMPT = "Question:\n{question}\n\nAnswer 1:\n{first}\n\nAnswer 2:\n{second}"
_LABEL = re.compile(rf"VERDICT\s*:\s*\**\s*({EQUIVALENT}|{DIFFERENT})\b", re.IGNORECASE)
_BARE = re.compile(rf"^\W*({EQUIVALENT}|{DIFFERENT})\W*$", re.IGNORECASE)
MAX_ANSWER_CHARS = 4000


class JudgeFailure(VerifierFailure):
    """The judge could not give a verdict (model error, or a reply without a label)."""


@dataclass(frozen=True, slots=True)
class Judgement:
    equivalent: bool
    """True only when every order asked said EQUIVALENT."""
    labels: tuple[str, ...]
    """The label of each order asked: reference first, then (if asked) candidate first."""

    @property
    def agreed(self) -> bool:
        return len(set(self.labels)) == 1


def parse_label(reply: str) -> str:
    """The verdict label of a judge reply (the last ``VERDICT: ...``, or a bare label)."""
    found = _LABEL.findall(reply)
    if found:
        return str(found[-1]).upper()
    bare = _BARE.match(reply.strip())
    if bare:
        return bare.group(1).upper()
    raise JudgeFailure(f"the judge replied without a verdict label: {reply.strip()[:200]!r}")


async def judge(
    model: Model,
    question: str,
    reference: str,
    candidate: str,
    *,
    both_orders: bool = True,
    max_output_tokens: int = 32,
) -> Judgement:
    """Ask ``model`` whether ``candidate`` is equivalent to ``reference``."""
    orders = [(reference, candidate)]
    if both_orders:
        orders.append((candidate, reference))
    labels = []
    for first, second in orders:
        params: JsonDict = {
            "input": [
                {"role": "system", "content": JUDGE_INSTRUCTIONS},
                {
                    "role": "user",
                    "content": JUDGE_PROMPT.format(
                        question=question,
                        first=first[:MAX_ANSWER_CHARS],
                        second=second[:MAX_ANSWER_CHARS],
                    ),
                },
            ],
            "temperature": 0.0,
            "max_output_tokens": max_output_tokens,
        }
        try:
            reply = await model.respond(params)
        except ModelError as error:
            raise JudgeFailure(f"the judge model failed: {error}") from error
        labels.append(parse_label(output_text(reply)))
    return Judgement(all(label == EQUIVALENT for label in labels), tuple(labels))


class JudgeModels:
    """The judge model of an environment: given explicitly, or opened from a model spec once
    (through the environment's context, on first use) and kept until the environment closes.
    """

    def __init__(self, model: Model | None, spec: str, model_name: str | None) -> None:
        self._given = model
        self._spec = spec
        self._model_name = model_name
        self._opened: Model | None = None

    def use(self, context: EnvironmentContext) -> Model:
        """The judge: the given model, or the one opened from the spec (opened now if first)."""
        if self._given is not None:
            return self._given
        if self._opened is None:
            self._opened = context.open_model(self._spec, self._model_name)
        return self._opened

    async def aclose(self) -> None:
        if self._opened is not None:
            opened, self._opened = self._opened, None
            await opened.aclose()


def judge_metrics(result: Judgement) -> dict[str, Any]:
    return {"judge_labels": ",".join(result.labels), "judge_agreed": result.agreed}

"""equivalence_judge: short-answer questions whose answers a judge model compares to a reference.

Task fields: ``question`` and ``expected_answer``. The judge is a model reached through the
model client: given to the constructor (``EquivalenceJudge(judge=model)``), or named by the
class attribute ``judge_model`` (``"local"`` by default, or a URL, or a name from
``palaestra_models.yaml``), which a subclass sets. See ``judge.py`` for the prompt and labels.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import ClassVar

from palaestra import (
    Environment,
    FailureKind,
    JsonDict,
    JudgeFailure,
    JudgeModels,
    Model,
    Session,
    Verdict,
    judge,
    judge_metrics,
    output_text,
    strip_reasoning,
    task_row,
)
from palaestra.envs._shared import puzzles as generator

SHORT_ANSWER_HINT = "Answer with the final answer only, as briefly as possible."


class EquivalenceJudge(Environment):
    """Short-answer questions; a judge model decides if the answer matches the reference."""

    name = "equivalence_judge"
    judge_model: ClassVar[str] = "local"
    """The judge: ``local``, an OpenAI-compatible base URL or a name from the model config."""
    judge_model_name: ClassVar[str | None] = None
    """The ``model`` field sent to a remote judge (default: the endpoint's first model)."""
    judge_both_orders: ClassVar[bool] = True
    """Ask twice, swapping the answers; reward only when both replies say EQUIVALENT."""
    verify_timeout: ClassVar[float] = 300.0

    def __init__(self, judge: Model | str | None = None) -> None:
        self.judges = JudgeModels(
            judge, self.judge_model, self.judge_model_name, within=self.verify_timeout
        )

    async def verify(self, session: Session, response: JsonDict) -> Verdict:
        task = session.task
        question, expected = task.get("question"), task.get("expected_answer")
        if not isinstance(question, str) or expected is None or not str(expected).strip():
            return Verdict.failed(
                FailureKind.INVALID_INPUT, "task needs 'question' and 'expected_answer'"
            )
        candidate = strip_reasoning(output_text(response)).strip()
        if not candidate:
            return Verdict(reward=0.0, metrics={"answer_found": False})
        try:
            model = self.judges.use(self.context)
            result = await judge(
                model,
                question,
                str(expected),
                candidate,
                both_orders=self.judge_both_orders,
                cache=self.judges.cache,
            )
        except JudgeFailure as failure:
            return Verdict.failed(FailureKind.VERIFIER_ERROR, str(failure))
        return Verdict(
            reward=1.0 if result.equivalent else 0.0,
            metrics={"answer_found": True, **judge_metrics(result)},
        )

    async def check_models(self) -> None:
        await self.judges.check(self.context)

    async def aclose(self) -> None:
        """Close the judge model this environment opened (a given one is the caller's)."""
        await self.judges.aclose()

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        """Arithmetic, sequence and letter-count questions with short reference answers."""
        rng = random.Random(seed)
        makers = [generator.arithmetic, generator.sequence, generator.letter_count]
        for _ in range(count):
            question, right, _ = rng.choice(makers)(rng)
            prompt = f"{question}\n\n{SHORT_ANSWER_HINT}"
            yield task_row(prompt, question=question, expected_answer=right)

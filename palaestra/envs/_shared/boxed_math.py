"""Math answers in ``\\boxed{}``: the symbolic check (math-verify, in a worker process of the
pool) and ``BoxedMath``, the base of the environments that score them (``math``, ``python_tool``).

math-verify bounds its own parsing and comparison with ``signal.alarm``, which only works on a
process's main thread; its timeouts are switched off here because the worker pool bounds each
call with a wall-clock limit of its own (and kills the worker when it is exceeded). When the
check says "not equal" and the judge is on, a judge model is asked in both orders and the
answer counts only when both replies say EQUIVALENT. A judge failure is a failure, never a 0.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from typing import Any, ClassVar

from palaestra import (
    PARAMS,
    Environment,
    FailureKind,
    JsonDict,
    JudgeFailure,
    JudgeModels,
    Model,
    Session,
    Verdict,
    input_items,
    judge,
    judge_metrics,
    last_boxed,
    output_text,
    strip_reasoning,
    task_row,
)
from palaestra.envs._shared import reasoning_gym


def symbolic_check(expected: str, answer: str) -> dict[str, bool]:
    """Compare the boxed ``answer`` with ``expected`` (plain or LaTeX), as math-verify does.

    Returns ``gold_parsed`` (could ``expected`` be read at all), ``answer_parsed`` and
    ``equal``.
    """
    from math_verify import parse, verify

    _quiet()
    gold = parse(_boxed(expected), parsing_timeout=None)
    if not gold:
        return {"gold_parsed": False, "answer_parsed": False, "equal": False}
    predicted = parse(_boxed(answer), parsing_timeout=None)
    if not predicted:
        return {"gold_parsed": True, "answer_parsed": False, "equal": False}
    equal = bool(verify(gold, predicted, timeout_seconds=None))
    return {"gold_parsed": True, "answer_parsed": True, "equal": equal}


def _boxed(text: str) -> str:
    text = text.strip()
    return text if text.startswith("\\boxed{") else f"\\boxed{{{text}}}"


@functools.cache
def _quiet() -> Any:
    """math-verify warns on every call that its timeouts are off: we know, the pool bounds it."""
    logging.getLogger("math_verify").setLevel(logging.ERROR)


SYSTEM_PROMPT = (
    "Solve the problem step by step. Then write the final answer, and only the final answer, "
    "inside \\boxed{}."
)
DEFAULT_MIXTURE: dict[str, float] = {
    "gsm_symbolic": 4.0,
    "basic_arithmetic": 1.0,
    "chain_sum": 1.0,
    "decimal_chain_sum": 1.0,
    "fraction_simplification": 1.0,
    "gcd": 1.0,
    "lcm": 1.0,
    "products": 1.0,
    "simple_equations": 1.0,
}


class BoxedMath(Environment):
    """Base of environments whose answer is the last ``\\boxed{}``: math-verify (+ judge).

    Subclasses give ``name`` and may add tools, a prompt (``system_prompt``) and a mixture of
    reasoning-gym generators (``datasets``) for ``generate_tasks``.
    """

    system_prompt: ClassVar[str] = SYSTEM_PROMPT
    """The system message of generated tasks: it asks for the answer in ``\\boxed{}``."""
    datasets: ClassVar[dict[str, float]] = DEFAULT_MIXTURE
    """reasoning-gym generators (name -> weight) that ``generate_tasks`` draws from."""
    check_timeout: ClassVar[float] = 20.0
    """Seconds the symbolic check may take in the worker pool (then: a timeout failure)."""
    use_judge: ClassVar[bool] = False
    """Ask a judge model when the symbolic check says "not equal" (a task may override)."""
    judge_model: ClassVar[str] = "local"
    """The judge: ``local``, an OpenAI-compatible base URL or a name from the model config."""
    judge_model_name: ClassVar[str | None] = None
    verify_timeout: ClassVar[float] = 300.0

    def __init__(self, judge: Model | str | None = None) -> None:
        self.judges = JudgeModels(
            judge, self.judge_model, self.judge_model_name, within=self.verify_timeout
        )

    async def verify(self, session: Session, response: JsonDict) -> Verdict:
        task = session.task
        expected = task.get("expected_answer")
        wants_judge = task.get("use_judge", self.use_judge)
        if expected is None or not str(expected).strip() or not isinstance(wants_judge, bool):
            return Verdict.failed(
                FailureKind.INVALID_INPUT,
                "task needs a non-empty 'expected_answer' ('use_judge' must be true or false)",
            )
        boxed = last_boxed(strip_reasoning(output_text(response)))
        metrics: dict[str, Any] = {
            "answer_found": bool(boxed),
            "extracted_answer": (boxed or "")[:500],
            "symbolic_match": False,
            "judged": False,
        }
        if not metrics["answer_found"]:
            return Verdict(reward=0.0, metrics=metrics)
        check = await self.run_in_pool(
            symbolic_check, str(expected), metrics["extracted_answer"], timeout=self.check_timeout
        )
        if not check["gold_parsed"]:
            return Verdict.failed(
                FailureKind.INVALID_INPUT, f"math-verify cannot read expected_answer {expected!r}"
            )
        metrics["symbolic_match"] = check["equal"]
        if check["equal"] or not wants_judge:
            return Verdict(reward=float(check["equal"]), metrics=metrics)
        try:
            model = self.judges.use(self.context)
            result = await judge(
                model,
                _question(task),
                str(expected),
                metrics["extracted_answer"],
                cache=self.judges.cache,
            )
        except JudgeFailure as failure:
            return Verdict.failed(FailureKind.VERIFIER_ERROR, str(failure))
        metrics.update(judged=True, **judge_metrics(result))
        return Verdict(reward=float(result.equivalent), metrics=metrics)

    async def check_models(self) -> None:
        """Reach the judge when every task asks it (``use_judge``); a task that asks for it
        itself meets it at its verify."""
        if self.use_judge:
            await self.judges.check(self.context)

    async def aclose(self) -> None:
        """Close the judge model this environment opened (a given one is the caller's)."""
        await self.judges.aclose()

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        """Problems from reasoning-gym's gsm_symbolic and arithmetic generators (``datasets``)."""
        for row in reasoning_gym.generate(self.datasets, {}, count, seed):
            question = row["question"]
            yield task_row(
                question,
                system=self.system_prompt,
                question=question,
                expected_answer=str(row["answer"]),
                source_dataset=row["dataset"],
            )


def _question(task: JsonDict) -> str:
    if isinstance(task.get("question"), str):
        return str(task["question"])
    params = task.get(PARAMS) or {}
    users = [i for i in input_items(params) if i.get("role") == "user"]
    content = users[-1].get("content", "") if users else ""
    return content if isinstance(content, str) else str(content)

"""Rewards composed from named parts: criteria weighed together, gates, and a judge model.

A ``Rubric`` scores one rollout with parts an author combines::

    rubric = Rubric(
        gate("answered", lambda s: bool(s.answer)),              # must pass, or the reward is 0
        criterion("exact", lambda s: s.answer == s.task["expected_answer"], weight=2),
        criterion("short", lambda s: len(s.answer) < 200),
        equivalence("judged", judges, weight=2),                 # a judge asked in both orders
    )
    verdict = await rubric.score(session, response, self.context)

Every part's score is kept as a reward component of the verdict (``reward_components``), so a
run's report shows each part beside the reward, and its metrics are kept prefixed with its
name. The reward is the weighted mean of the criteria (``normalize=False``: the weighted sum).
Gates are scored first, in order; the first that fails ends the scoring with reward 0 (the
parts after it, a judge's calls included, are not run, and ``rubric_gate`` names it).

A part that cannot score is a failure of the rollout, never a number: a part raising a
``RolloutFailure`` (a judge's reply without a verdict label is a ``JudgeFailure``; a task
without the fields a part reads is ``InvalidTask``) makes the verdict a failure of that kind
naming the part, and so does a score that is not a finite number.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from palaestra.environment.answers import strip_reasoning
from palaestra.environment.context import EnvironmentContext
from palaestra.environment.judge import JudgeModels, judge
from palaestra.environment.sessions import Session
from palaestra.environment.verdicts import finite
from palaestra.errors import InvalidTask, RolloutFailure
from palaestra.models.base import Model
from palaestra.types import FailureKind, JsonDict, Verdict, output_text

GATE_METRIC = "rubric_gate"


@dataclass(frozen=True, slots=True)
class Submission:
    """What a part scores: the rollout's session (task and state), the final response, its
    answer (the final assistant text without reasoning) and the environment's context."""

    session: Session
    response: JsonDict
    context: EnvironmentContext
    answer: str

    @property
    def task(self) -> JsonDict:
        return self.session.task


@dataclass(frozen=True, slots=True)
class Scored:
    """A part's score with metrics to keep beside it (written as ``<part>/<key>``)."""

    value: float
    metrics: Mapping[str, Any] = field(default_factory=dict)


PartResult = float | bool | Scored
Check = Callable[[Submission], PartResult | Awaitable[PartResult]]


@dataclass(frozen=True, slots=True)
class Criterion:
    """A scored part: its value (a number, 1/0 for a bool) counts with ``weight``."""

    name: str
    check: Check
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class Gate:
    """A part that must reach ``threshold`` for the criteria to count at all."""

    name: str
    check: Check
    threshold: float = 1.0


def criterion(name: str, check: Check, *, weight: float = 1.0) -> Criterion:
    """A part whose score counts with ``weight`` (``check`` may be plain or async)."""
    return Criterion(name, check, weight)


def gate(name: str, check: Check, *, threshold: float = 1.0) -> Gate:
    """A part that must score at least ``threshold`` (a bool: must be true)."""
    return Gate(name, check, threshold)


class Rubric:
    """Named parts scored into one verdict (see the module's docstring)."""

    def __init__(self, *parts: Criterion | Gate, normalize: bool = True) -> None:
        names = [part.name for part in parts]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"rubric parts need distinct names; repeated: {', '.join(repeated)}")
        if not parts:
            raise ValueError("a rubric needs at least one part")
        self.gates = [part for part in parts if isinstance(part, Gate)]
        self.criteria = [part for part in parts if isinstance(part, Criterion)]
        for part in self.criteria:
            if not finite(part.weight) or part.weight < 0:
                raise ValueError(f"rubric part '{part.name}': weight {part.weight!r} is not >= 0")
        total = sum(part.weight for part in self.criteria)
        if self.criteria and total <= 0:
            raise ValueError("the rubric's criteria weigh nothing: give one a weight above 0")
        self.normalize = normalize
        self._total = total

    async def score(
        self,
        session: Session,
        response: JsonDict,
        context: EnvironmentContext | None = None,
    ) -> Verdict:
        """The verdict of this rollout: reward, each part as a reward component, or the first
        part's failure."""
        answer = strip_reasoning(output_text(response)).strip()
        submission = Submission(session, response, context or EnvironmentContext(), answer)
        components: dict[str, float] = {}
        metrics: dict[str, Any] = {}
        for part in self.gates:
            value = await _run(part.name, part.check, submission, components, metrics)
            if isinstance(value, Verdict):
                return value
            if value < part.threshold:
                metrics[GATE_METRIC] = part.name
                return Verdict(reward=0.0, reward_components=components, metrics=metrics)
        weighted = 0.0
        for crit in self.criteria:
            value = await _run(crit.name, crit.check, submission, components, metrics)
            if isinstance(value, Verdict):
                return value
            weighted += crit.weight * value
        if not self.criteria:
            reward = 1.0  # every gate passed, and nothing else is asked
        else:
            reward = weighted / self._total if self.normalize else weighted
        return Verdict(reward=reward, reward_components=components, metrics=metrics)


async def _run(
    name: str,
    check: Check,
    submission: Submission,
    components: dict[str, float],
    metrics: dict[str, Any],
) -> float | Verdict:
    """One part's score (recorded in ``components`` and ``metrics``), or its failed verdict."""
    try:
        result = check(submission)
        if inspect.isawaitable(result):
            result = await result
    except RolloutFailure as failure:
        return Verdict.failed(failure.kind, f"rubric part '{name}': {failure.reason}")
    part_metrics: Mapping[str, Any] = {}
    if isinstance(result, Scored):
        part_metrics, result = result.metrics, result.value
    if isinstance(result, bool):
        result = float(result)
    if not finite(result):
        return Verdict.failed(
            FailureKind.VERIFIER_ERROR,
            f"rubric part '{name}' scored {result!r}, not a finite number",
        )
    value = float(result)
    components[name] = value
    metrics.update({f"{name}/{key}": item for key, item in part_metrics.items()})
    return value


def task_field(key: str) -> Callable[[Submission], str]:
    """Read the task's field ``key`` as text; a task without it is ``InvalidTask``."""

    def read(submission: Submission) -> str:
        value = submission.task.get(key)
        if value is None or not str(value).strip():
            raise InvalidTask(f"the task has no '{key}'")
        return str(value)

    read.__doc__ = f"The task's ``{key}``, as text (``InvalidTask`` when it has none)."
    return read


QUESTION = task_field("question")
EXPECTED_ANSWER = task_field("expected_answer")


def equivalence(
    name: str,
    judges: JudgeModels | Model,
    *,
    weight: float = 1.0,
    question: Callable[[Submission], str] = QUESTION,
    reference: Callable[[Submission], str] = EXPECTED_ANSWER,
    both_orders: bool = True,
) -> Criterion:
    """A judge model decides whether the answer means the reference answer, asked in both
    orders (``palaestra.environment.judge``): 1 only when every order says EQUIVALENT.

    ``judges`` is the environment's ``JudgeModels`` (the model opened through the context on
    first use, and its cache: a prompt already judged is not asked again), or a ``Model``.
    An empty answer scores 0 without a call; a reply without a label is a ``JudgeFailure``.
    """

    async def check(submission: Submission) -> Scored:
        asked, expected = question(submission), reference(submission)
        if not submission.answer:
            return Scored(0.0, {"answer_found": False})
        if isinstance(judges, JudgeModels):
            model, cache = judges.use(submission.context), judges.cache
        else:
            model, cache = judges, None
        result = await judge(
            model, asked, expected, submission.answer, both_orders=both_orders, cache=cache
        )
        return Scored(
            float(result.equivalent),
            {"labels": ",".join(result.labels), "agreed": result.agreed, "cached": result.cached},
        )

    return Criterion(name, check, weight)

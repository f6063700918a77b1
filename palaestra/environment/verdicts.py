"""What a verdict must hold to be a score: rewards that are finite numbers.

The one check of a verdict's numbers. The episode frame runs it after every ``verify``
(whatever the environment client, in-process or remote); ``as_verdict`` runs it on what an
in-process ``verify`` returned, so a served environment and ``palaestra verify`` never score
NaN either. It is cheap enough to run on every verdict (measured: benchmarks/results/micro.md).
"""

from __future__ import annotations

import math
import numbers

from palaestra.types import FailureKind, Verdict

_NOT_FINITE = "not a finite number"


def finite(value: object) -> bool:
    """A real number that is neither NaN nor infinite (bool, int, numpy numbers included)."""
    if type(value) is float:  # the common case first, and the cheapest test
        return math.isfinite(value)
    if isinstance(value, numbers.Real):
        try:
            return math.isfinite(value)
        except OverflowError:  # an int beyond the range of a float
            return False
    return False


def verdict_problem(verdict: Verdict) -> str | None:
    """Why ``verdict`` cannot be scored (a reward that is not a finite number), or None.

    The one check of a verdict's numbers, for every client (the episode frame runs it after
    ``verify``); a verdict that is already a failure has nothing to check.
    """
    if verdict.failure is not None:
        return None
    if not finite(verdict.reward):
        return f"verify returned a reward of {_shown(verdict.reward)}, {_NOT_FINITE}"
    components: object = verdict.reward_components
    if components is not None:
        if not isinstance(components, dict):
            return f"verify returned reward_components as {type(components).__name__}, not a dict"
        for name, value in components.items():
            if not finite(value):
                return (
                    f"verify returned reward_components[{name!r}] = {_shown(value)}, {_NOT_FINITE}"
                )
    steps: object = verdict.step_rewards
    if steps is not None:
        if not isinstance(steps, list | tuple):
            return f"verify returned step_rewards as {type(steps).__name__}, not a list"
        for index, value in enumerate(steps):
            if not finite(value):
                return f"verify returned step_rewards[{index}] = {_shown(value)}, {_NOT_FINITE}"
    return None


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def as_verdict(result: object) -> Verdict:
    """Accept what ``verify`` may return: a Verdict, a number or a bool.

    A reward that is not a finite number makes the verdict a ``verifier_error`` failure, so
    neither a served environment nor ``palaestra verify`` ever scores NaN.
    """
    if isinstance(result, Verdict):
        verdict = result
    elif isinstance(result, numbers.Real):
        if not finite(result):
            return Verdict.failed(
                FailureKind.VERIFIER_ERROR, f"verify returned {_shown(result)}, {_NOT_FINITE}"
            )
        verdict = Verdict(reward=float(result))
    else:
        return Verdict.failed(
            FailureKind.VERIFIER_ERROR,
            f"verify returned {type(result).__name__}, expected Verdict or float",
        )
    problem = verdict_problem(verdict)
    return verdict if problem is None else Verdict.failed(FailureKind.VERIFIER_ERROR, problem)

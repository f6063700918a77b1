"""math: answers in ``\\boxed{}`` checked with math-verify, with an optional LLM judge.

Task fields: ``expected_answer`` (plain or LaTeX, e.g. ``42``, ``\\frac{1}{2}``), ``question``
(for the judge; else the last user message is used) and ``use_judge`` (per task; default the
class attribute ``use_judge``). The check runs in the worker pool (``run_in_pool``); when it
says "not equal" and the judge is on, a judge model is asked in both orders and the answer
counts only when both replies say EQUIVALENT. A judge failure is a failure, never a 0.
"""

from __future__ import annotations

from palaestra.envs._shared.boxed_math import BoxedMath


class Math(BoxedMath):
    """Math word problems and arithmetic; \\boxed{} answers checked by math-verify (+ judge)."""

    name = "math"

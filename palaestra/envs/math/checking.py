"""The symbolic answer check (math-verify), run in a worker process of the pool.

math-verify bounds its own parsing and comparison with ``signal.alarm``, which only works on a
process's main thread; its timeouts are switched off here because the worker pool bounds each
call with a wall-clock limit of its own (and kills the worker when it is exceeded).
"""

from __future__ import annotations

import functools
import logging
from typing import Any


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

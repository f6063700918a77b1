"""Verification throughput of a CPU-heavy verifier: math-verify on generated answers.

Pairs of (gold answer, model answer) are generated from a seed — integers, fractions written
as decimals or unreduced, radicals, polynomials in another form, multiples of pi, some right
and some wrong — and each is checked with math-verify (``parse`` both, ``verify``). Measured:
in this process, one after another; then, when ``palaestra.sandbox.WorkerPool`` exists, all
at once through a pool of ``--workers`` warm processes (what an environment's ``verify``
does with ``run_in_pool``). It prints ``VERIFY <json>``.

Run: ``python benchmarks/verify_math.py [--n 2000] [--workers 2]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
from fractions import Fraction
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))  # pool workers import this module


def generate_pairs(n: int, seed: int = 7) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        kind = i % 5
        right = rng.random() < 0.7
        if kind == 0:
            value = rng.randrange(2, 10_000)
            gold, answer = str(value), str(value if right else value + rng.choice((-1, 1)))
        elif kind == 1:
            value = Fraction(rng.randrange(1, 200), rng.choice((2, 4, 5, 8, 10, 20, 25)))
            shown = value if right else value + Fraction(1, 100)
            k = rng.randrange(2, 6)
            answer = (
                f"{float(shown):g}"
                if rng.random() < 0.5
                else f"\\frac{{{shown.numerator * k}}}{{{shown.denominator * k}}}"
            )
            gold = f"\\frac{{{value.numerator}}}{{{value.denominator}}}"
        elif kind == 2:
            a, b = rng.randrange(2, 9), rng.choice((2, 3, 5, 6, 7))
            gold = f"{a}\\sqrt{{{b}}}"
            answer = f"\\sqrt{{{a * a * b if right else a * a * b + 1}}}"
        elif kind == 3:
            a = rng.randrange(1, 12)
            gold = f"x^2 + {2 * a}x + {a * a}"
            answer = f"(x + {a if right else a + 1})^2"
        else:
            p, q = rng.randrange(1, 12), rng.choice((2, 3, 4, 6, 12))
            gold = f"\\frac{{{p}\\pi}}{{{q}}}"
            answer = f"{p if right else p + 1}\\pi/{q}"
        pairs.append((gold, f"Working through it, the answer is $\\boxed{{{answer}}}$."))
    return pairs


def check(gold: str, answer: str) -> bool:
    """math-verify's verdict (its own alarms off: a pool worker runs this off the main thread)."""
    import logging

    from math_verify import parse, verify

    logging.getLogger("math_verify").setLevel(logging.ERROR)  # "timeouts are off": we know

    expected = parse(f"\\boxed{{{gold}}}", parsing_timeout=None)
    predicted = parse(answer, parsing_timeout=None)
    return bool(expected and predicted and verify(expected, predicted, timeout_seconds=None))


def single_process(pairs: list[tuple[str, str]]) -> tuple[dict[str, float], list[bool]]:
    check("1", "\\boxed{1}")  # import and warm up outside the measurement
    wall, cpu = time.perf_counter(), time.process_time()
    verdicts = [check(gold, answer) for gold, answer in pairs]
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "verifications": len(pairs),
        "seconds": wall,
        "per_s": len(pairs) / wall,
        "cpu_ms_each": cpu / len(pairs) * 1000,
    }, verdicts


async def pooled(pairs: list[tuple[str, str]], workers: int) -> tuple[dict[str, float], list[bool]]:
    from verify_math import check  # by module name: run as a script, this one is __main__'s

    from palaestra.sandbox import WorkerPool

    async with WorkerPool(
        workers=workers, timeout=60, preload=("math_verify", "verify_math")
    ) as pool:
        await asyncio.gather(*(pool.run(check, "1", "\\boxed{1}") for _ in range(workers * 2)))
        wall = time.perf_counter()
        verdicts = await asyncio.gather(*(pool.run(check, g, a) for g, a in pairs))
        wall = time.perf_counter() - wall
    return {
        "verifications": len(pairs),
        "seconds": wall,
        "per_s": len(pairs) / wall,
        "workers": workers,
    }, list(verdicts)


def pool_available() -> str | None:
    """None when the worker pool can be used, else why not."""
    try:
        from palaestra.sandbox import WorkerPool  # noqa: F401
    except ImportError as error:
        return f"palaestra.sandbox.WorkerPool is not there yet ({error})"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    options = parser.parse_args()
    pairs = generate_pairs(options.n)
    result: dict[str, object] = {"cores": len(os.sched_getaffinity(0))}
    single, verdicts = single_process(pairs)
    result["single_process"] = single
    result["right_answers"] = sum(verdicts)
    problem = pool_available()
    if problem is None:
        try:
            pool, pool_verdicts = asyncio.run(pooled(pairs, options.workers))
        except Exception as error:  # report it: the pool is another team's work in progress
            result["pool_error"] = f"{type(error).__name__}: {error}"
        else:
            result["pool"] = pool
            result["pool_agrees"] = pool_verdicts == verdicts
    else:
        result["pool_error"] = problem
    print("VERIFY " + orjson.dumps(result).decode(), flush=True)


if __name__ == "__main__":
    main()

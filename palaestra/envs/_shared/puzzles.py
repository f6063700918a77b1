"""Seeded multiple-choice questions with one right option and three plausible wrong ones."""

from __future__ import annotations

import random
from collections.abc import Callable
from fractions import Fraction

Question = tuple[str, list[str], str]  # (question, options, letter of the right option)
_WORDS = ("banana", "mississippi", "bookkeeper", "committee", "strawberry", "parallel", "balloon")


def make_question(rng: random.Random) -> Question:
    maker: Callable[[random.Random], tuple[str, str, list[str]]] = rng.choice(_MAKERS)
    question, right, wrong = maker(rng)
    options = [right, *wrong]
    rng.shuffle(options)
    return question, options, chr(ord("A") + options.index(right))


def _near(rng: random.Random, value: int, count: int = 3) -> list[str]:
    """``count`` distinct wrong integers close to ``value``."""
    wrong: set[int] = set()
    while len(wrong) < count:
        candidate = value + rng.choice([-1, 1]) * rng.randint(1, max(3, abs(value) // 10))
        if candidate != value:
            wrong.add(candidate)
    return [str(w) for w in sorted(wrong)]


def arithmetic(rng: random.Random) -> tuple[str, str, list[str]]:
    a, b = rng.randint(12, 99), rng.randint(3, 49)
    symbol, value = rng.choice([("+", a + b), ("-", a - b), ("\u00d7", a * b)])
    return f"What is {a} {symbol} {b}?", str(value), _near(rng, value)


def _prime(rng: random.Random) -> tuple[str, str, list[str]]:
    def is_prime(n: int) -> bool:
        return n > 1 and all(n % d for d in range(2, int(n**0.5) + 1))

    primes = [n for n in range(20, 200) if is_prime(n)]
    composites = [n for n in range(21, 200, 2) if not is_prime(n) and n % 5]
    return (
        "Which of these numbers is prime?",
        str(rng.choice(primes)),
        [str(n) for n in rng.sample(composites, 3)],
    )


def _largest_fraction(rng: random.Random) -> tuple[str, str, list[str]]:
    seen: dict[Fraction, str] = {}
    while len(seen) < 4:
        denominator = rng.randint(2, 12)
        numerator = rng.randint(1, denominator - 1)
        seen.setdefault(Fraction(numerator, denominator), f"{numerator}/{denominator}")
    ordered = [seen[f] for f in sorted(seen)]
    return "Which of these fractions is the largest?", ordered[-1], ordered[:-1]


def sequence(rng: random.Random) -> tuple[str, str, list[str]]:
    start, step = rng.randint(1, 30), rng.randint(2, 12)
    shown = ", ".join(str(start + step * i) for i in range(4))
    value = start + step * 4
    return f"What number comes next: {shown}, ...?", str(value), _near(rng, value)


def letter_count(rng: random.Random) -> tuple[str, str, list[str]]:
    word = rng.choice(_WORDS)
    letter = rng.choice(sorted(set(word)))
    count = word.count(letter)
    wrong = [str(n) for n in range(max(0, count - 2), count + 4) if n != count][:3]
    return f"How many times does the letter '{letter}' appear in '{word}'?", str(count), wrong


_MAKERS = [arithmetic, _prime, _largest_fraction, sequence, letter_count]

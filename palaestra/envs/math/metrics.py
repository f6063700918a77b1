"""pass@k and majority@k of a math run, from its rollouts file.

    python -m palaestra.envs.math.metrics runs/math.jsonl

majority@k: per task, the answers of its k rollouts are grouped by equivalence (math-verify,
in this process with its own timeouts); the largest group (ties: the one seen first) is the
vote, and the task counts when that answer was scored correct. Rollouts without an answer do
not vote. pass@k is the unbiased estimator over the same rollouts (reward >= 1 passes).
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path

import orjson

from palaestra import (
    PASS_THRESHOLD,
    ROLLOUT_INDEX,
    TASK_INDEX,
    InputError,
    JsonDict,
    mean_pass_at_k,
    read_objects,
)

Equivalent = Callable[[str, str], bool]


def math_verify_equal(first: str, second: str) -> bool:
    """Are two boxed answers equal to math-verify (main thread: its own timeouts apply)?"""
    from math_verify import parse, verify

    left, right = parse(f"\\boxed{{{first}}}"), parse(f"\\boxed{{{second}}}")
    return bool(left and right and verify(left, right))


def answer_metrics(
    rows: Iterable[JsonDict], equivalent: Equivalent = math_verify_equal
) -> JsonDict:
    """``tasks``, ``k`` (fewest rollouts of a task), ``pass@1``, ``pass@k`` and ``majority@k``."""
    by_task: dict[int, list[JsonDict]] = defaultdict(list)
    for row in rows:
        by_task[int(row[TASK_INDEX])].append(row)
    if not by_task:
        return {"tasks": 0}
    rewards = {
        task: [float(r.get("reward", 0.0)) for r in group] for task, group in by_task.items()
    }
    k = min(len(group) for group in by_task.values())
    majority = [_majority_correct(group, equivalent) for group in by_task.values()]
    return {
        "tasks": len(by_task),
        "k": k,
        **mean_pass_at_k(rewards),
        f"majority@{k}": sum(majority) / len(majority),
    }


def _majority_correct(rollouts: list[JsonDict], equivalent: Equivalent) -> bool:
    groups: list[tuple[str, list[JsonDict]]] = []  # (representative answer, its rollouts)
    for row in sorted(rollouts, key=lambda r: int(r.get(ROLLOUT_INDEX, 0))):
        answer = str(row.get("extracted_answer") or "").strip()
        if not row.get("answer_found") or not answer:
            continue
        for representative, members in groups:
            if answer == representative or equivalent(representative, answer):
                members.append(row)
                break
        else:
            groups.append((answer, [row]))
    if not groups:
        return False
    _, voted = max(groups, key=lambda group: len(group[1]))  # max keeps the first of a tie
    return any(float(r.get("reward", 0.0)) >= PASS_THRESHOLD for r in voted)


def main(argv: list[str] | None = None) -> int:
    paths = argv if argv is not None else sys.argv[1:]
    if len(paths) != 1:
        print("usage: python -m palaestra.envs.math.metrics ROLLOUTS.jsonl", file=sys.stderr)
        return 2
    try:
        rows = [row for _, row in read_objects(Path(paths[0]))]
    except InputError as error:  # one line, not a traceback
        print(f"error: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"error: cannot read {paths[0]}: {error.strerror}", file=sys.stderr)
        return 1
    print(orjson.dumps(answer_metrics(rows), option=orjson.OPT_INDENT_2).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

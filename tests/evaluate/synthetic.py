"""Runs written by hand: output and failures files of known content, for the statistics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import orjson

from palaestra.types import JsonDict

Outcome = float | str | None
"""A rollout: its reward, or a failure kind (a str), or None for a NaN reward."""


def prompt(task: int, text: str = "task") -> JsonDict:
    return {"input": [{"role": "user", "content": f"{text} {task}"}]}


def write_run(
    path: Path,
    outcomes: Mapping[int, Sequence[Outcome]],
    *,
    metrics: Mapping[int, Sequence[Mapping[str, object]]] | None = None,
    answers: Mapping[int, Sequence[str]] | None = None,
    text: str = "task",
    masked: bool = True,
) -> Path:
    """Write ``path`` and its failures file: per task, one rollout per outcome, in order."""
    rows: list[bytes] = []
    failures: list[bytes] = []
    for task, results in outcomes.items():
        for repeat, outcome in enumerate(results):
            row: JsonDict = {
                "responses_create_params": prompt(task, text),
                "agent_ref": {"type": "responses_api_agents", "name": "agent"},
                "_ng_task_index": task,
                "_ng_rollout_index": repeat,
            }
            if isinstance(outcome, str):
                row["failure"] = {"kind": outcome, "reason": f"{outcome} here", "masked": masked}
                row["_ng_failure_class"] = outcome
                failures.append(orjson.dumps(row) + b"\n")
                continue
            extra = dict(metrics[task][repeat]) if metrics else {}
            if answers:
                extra["extracted_answer"] = answers[task][repeat]
            row.update(response={"output": []}, reward=outcome, **extra)
            row["_palaestra"] = {"verifier_fields": ["reward", *extra]}
            rows.append(orjson.dumps(row) + b"\n")
    path.write_bytes(b"".join(rows))
    path.with_name(path.stem + "_failures.jsonl").write_bytes(b"".join(failures))
    return path

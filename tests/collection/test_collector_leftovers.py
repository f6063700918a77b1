"""What a fresh run (no ``resume``, no ``overwrite``) does with the files an earlier run left.

It refuses only when there is work to lose: rows in the output, or checkpoints of rollouts
left unfinished. A run that wrote no row (killed before its first, or its output deleted)
leaves only sidecars, and a fresh run replaces them whatever command made them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest

from palaestra.collection.checkpoints import checkpoints_path
from palaestra.errors import ConfigError, ModelError
from palaestra.types import AgentResult, JsonDict
from tests.collection.test_collector import read_jsonl
from tests.collection.test_collector_guarantees import (
    Scripted,
    numbered,
    pairs,
    run,
    scored,
    write_tasks,
)


async def test_a_fresh_run_replaces_the_files_of_a_run_whose_output_was_deleted(
    tmp_path: Path,
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", numbered(3))

    def half_broken(task: JsonDict) -> AgentResult:
        if task["n"] == 1:
            raise ModelError("HTTP 500 after 3 retries")
        return scored(1.0)

    await run(tmp_path, Scripted(half_broken))
    (tmp_path / "out.jsonl").unlink()
    inputs = tmp_path / "out_materialized_inputs.jsonl"
    with inputs.open("ab") as file:  # and a line of something else entirely
        file.write(b'{"not": "a dispatched row"}\n')

    summary = await run(tmp_path, Scripted(lambda task: scored(0.5)), repeats=2)

    expected = [(t, r) for t in range(3) for r in range(2)]
    assert summary.done == 6 and summary.skipped == 0
    assert pairs(tmp_path / "out.jsonl") == expected
    assert pairs(inputs) == expected
    assert read_jsonl(tmp_path / "out_failures.jsonl") == []
    assert not (tmp_path / "out_failures_history.jsonl").exists()
    assert all(r["_palaestra"]["attempt"] == 1 for r in read_jsonl(tmp_path / "out.jsonl"))
    assert orjson.loads((tmp_path / "out_run.json").read_bytes())["repeats"] == 2


async def test_a_fresh_run_replaces_the_files_of_a_run_killed_before_its_first_row(
    tmp_path: Path,
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", numbered(4))
    held = Scripted(lambda task: scored(1.0))
    held.gate = asyncio.Event()  # never set: every rollout is in flight when it is killed
    killed = asyncio.create_task(run(tmp_path, held))
    while held.runs < 2:
        await asyncio.sleep(0.001)
    killed.cancel()
    with pytest.raises(asyncio.CancelledError):
        await killed
    assert (tmp_path / "out.jsonl").read_bytes() == b""
    assert len(read_jsonl(tmp_path / "out_materialized_inputs.jsonl")) == 2

    again = await run(tmp_path, Scripted(lambda task: scored(1.0)), overrides={"top_p": 0.5})

    assert again.done == 4 and again.stopped_reason is None
    assert pairs(tmp_path / "out_materialized_inputs.jsonl") == [(t, 0) for t in range(4)]
    recorded = orjson.loads((tmp_path / "out_run.json").read_bytes())
    assert recorded["sampling"] == {"top_p": 0.5}


async def test_a_fresh_run_still_refuses_when_rows_or_unfinished_rollouts_would_be_lost(
    tmp_path: Path,
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", numbered(2))
    always = Scripted(lambda task: scored(1.0))
    await run(tmp_path, always)
    with pytest.raises(ConfigError, match=r"out\.jsonl already exists: pass --resume"):
        await run(tmp_path, always)

    (tmp_path / "out.jsonl").write_bytes(b"")  # no row, but a rollout's saved turns
    checkpoints = checkpoints_path(tmp_path / "out.jsonl")
    line = {"task": 1, "rollout": 0, "epoch": 1, "checkpoint": {"turns": 3}}
    checkpoints.write_bytes(orjson.dumps(line) + b"\n")
    with pytest.raises(ConfigError) as refused:
        await run(tmp_path, always)
    assert str(refused.value) == (
        f"{checkpoints} holds rollouts a run left unfinished: pass --resume to continue "
        "that run or --overwrite to start over"
    )
    assert always.runs == 2  # nothing ran
    assert checkpoints.read_bytes() == orjson.dumps(line) + b"\n"

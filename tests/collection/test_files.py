from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path

import pytest

from palaestra.collection.files import (
    JsonlAppender,
    OutputError,
    RunFiles,
    archive_failures,
    failed_attempts,
    finished_pairs,
    keep_dispatched,
    repair_torn_tail,
)
from palaestra.errors import InputError


def test_sidecar_names_follow_nemo_gym(tmp_path: Path) -> None:
    files = RunFiles(tmp_path / "out.jsonl")
    assert files.materialized_inputs.name == "out_materialized_inputs.jsonl"
    assert files.failures.name == "out_failures.jsonl"
    assert files.aggregate_metrics.name == "out_aggregate_metrics.json"


def test_torn_last_line_is_cut_and_finished_pairs_read(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    writer = JsonlAppender(path)
    writer.append({"_ng_task_index": 0, "_ng_rollout_index": 0})
    writer.append({"_ng_task_index": 0, "_ng_rollout_index": 1})
    writer.close()
    with path.open("ab") as file:
        file.write(b'{"_ng_task_index": 1, "_ng_rol')
    assert repair_torn_tail(path) is True
    assert path.read_bytes().endswith(b"}\n")
    assert finished_pairs(path) == {(0, 0), (0, 1)}
    assert repair_torn_tail(path) is False


def test_torn_single_line_file_becomes_empty(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_bytes(b'{"half')
    assert repair_torn_tail(path)
    assert path.read_bytes() == b""


def test_a_foreign_row_in_the_output_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text('{"_ng_task_index": 0, "_ng_rollout_index": 0}\n{"hello": 1}\n')
    with pytest.raises(InputError, match=r"out.jsonl:2: field '_ng_task_index"):
        finished_pairs(path)


def test_archived_failures_count_attempts(tmp_path: Path) -> None:
    files = RunFiles(tmp_path / "out.jsonl")
    files.failures.write_text(
        '{"_ng_task_index": 0, "_ng_rollout_index": 0, "failure": {"kind": "timeout"}}\n'
        '{"_ng_task_index": 3, "_ng_rollout_index": null, "failure": {"kind": "invalid_input"}}\n'
    )
    archive_failures(files)
    archive_failures(files)  # nothing left to move: no-op
    assert not files.failures.exists()
    files.failures.write_text(
        '{"_ng_task_index": 0, "_ng_rollout_index": 0, "failure": {"kind": "timeout"}}\n'
    )
    archive_failures(files)
    assert failed_attempts(files.failure_history) == {(0, 0): 2}


def test_a_lazy_append_outside_an_event_loop_is_on_disk_at_once(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    writer = JsonlAppender(path, flush_each=False)
    writer.append({"a": 1})
    assert path.read_bytes() == b'{"a":1}\n'
    writer.close()


async def test_each_append_is_on_disk_before_it_returns_even_in_a_loop(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    writer = JsonlAppender(path)
    writer.append({"a": 1})
    assert path.read_bytes() == b'{"a":1}\n'
    writer.close()


async def test_lazy_appends_in_one_loop_turn_reach_the_disk_together_at_its_end(
    tmp_path: Path,
) -> None:
    path = tmp_path / "out.jsonl"
    writer = JsonlAppender(path, flush_each=False)
    writer.append({"a": 1})
    writer.append({"a": 2})
    assert path.read_bytes() == b""  # still in this process's buffer
    await asyncio.sleep(0)
    assert path.read_bytes() == b'{"a":1}\n{"a":2}\n'
    writer.append({"a": 3})
    writer.close()
    assert path.read_bytes().endswith(b'{"a":3}\n')
    await asyncio.sleep(0)  # the pending flush finds the file closed and does nothing


def test_a_write_the_disk_cannot_take_whole_is_cut_back_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "out.jsonl"
    writer = JsonlAppender(path)
    writer.append({"a": 1})
    real_write = os.write

    def half_then_full(fd: int, data: bytes | memoryview) -> int:
        if fd != writer._fd:
            return real_write(fd, data)
        real_write(fd, bytes(data[: len(data) // 2]))  # the disk took half the line...
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # ...and then was full

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OutputError, match=r"out.jsonl: No space left on device"):
        writer.append({"a": 2, "padding": "x" * 100})
    monkeypatch.undo()
    assert path.read_bytes() == b'{"a":1}\n'  # no torn line for the next resume to repair
    writer.append({"a": 3})
    writer.close()
    assert path.read_bytes() == b'{"a":1}\n{"a":3}\n'


async def test_a_failed_deferred_write_is_raised_by_the_next_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "inputs.jsonl"
    writer = JsonlAppender(path, flush_each=False)

    def full(fd: int, data: bytes | memoryview) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    writer.append({"a": 1})
    await asyncio.sleep(0)  # the deferred write fails here, with no caller to tell
    monkeypatch.undo()
    with pytest.raises(OutputError, match="No space left"):
        writer.append({"a": 2})
    with pytest.raises(OutputError):
        writer.close()
    assert path.read_bytes() == b""


def test_an_output_that_cannot_be_created_is_one_line_naming_it(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    expected = r"cannot write .*file/out.jsonl: a parent is not a directory"
    with pytest.raises(OutputError, match=expected):
        JsonlAppender(tmp_path / "file" / "out.jsonl")


def test_keep_dispatched_drops_unfinished_and_duplicate_pairs(tmp_path: Path) -> None:
    path = tmp_path / "inputs.jsonl"
    rows = [(0, 0), (0, 1), (1, 0), (0, 0), (2, 0)]
    path.write_text(
        "".join(f'{{"_ng_task_index": {t}, "_ng_rollout_index": {r}}}\n' for t, r in rows)
    )
    assert keep_dispatched(path, {(0, 0), (1, 0)}) == 3
    assert finished_pairs(path) == {(0, 0), (1, 0)}
    assert path.read_bytes().count(b"\n") == 2
    assert keep_dispatched(path, {(0, 0), (1, 0)}) == 0

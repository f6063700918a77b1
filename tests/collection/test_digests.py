"""A resume refuses a task whose folder changed since its rows were written, naming the folder."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import orjson
import pytest

from palaestra.collection.collector import CollectConfig, inspect_run
from palaestra.collection.digests import check_task_digests, recorded_digests, tasks_digest
from palaestra.collection.files import RunFiles
from palaestra.errors import ConfigError
from palaestra.wire.harbor import folder_digest
from palaestra.wire.rows import PARAMS, TASK_DIGEST


def folder(path: Path, text: str = "1") -> Path:
    path.mkdir(parents=True)
    (path / "test.sh").write_text(text)
    return path


def write_run(tmp_path: Path, folders: list[Path]) -> CollectConfig:
    """An input and an output whose rows name ``folders`` with their digests now, and the
    run's identity file, as an earlier run leaves them."""
    rows = [
        {PARAMS: {"input": "hi"}, TASK_DIGEST: {"path": str(f), "digest": folder_digest(f)}}
        for f in folders
    ]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_bytes(b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in rows))
    output = tmp_path / "out.jsonl"
    done = [
        {**row, "_ng_task_index": i, "_ng_rollout_index": 0, "reward": 1.0}
        for i, row in enumerate(rows)
    ]
    output.write_bytes(b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in done))
    config = CollectConfig(input=tasks, output=output, resume=True)
    _, identity = inspect_run(RunFiles(output), config)  # no identity yet: nothing compared
    RunFiles(output).identity.write_bytes(orjson.dumps(identity))
    return config


def test_unchanged_folders_resume(tmp_path: Path) -> None:
    folders = [folder(tmp_path / "a"), folder(tmp_path / "b")]
    config = write_run(tmp_path, folders)
    inspect_run(RunFiles(config.output), config)
    assert recorded_digests(config.output) == {str(f): folder_digest(f) for f in folders}


def test_a_changed_folder_is_refused_in_one_line_naming_it(tmp_path: Path) -> None:
    folders = [folder(tmp_path / "a"), folder(tmp_path / "b")]
    config = write_run(tmp_path, folders)
    (folders[1] / "test.sh").write_text("0")
    with pytest.raises(ConfigError) as raised:
        inspect_run(RunFiles(config.output), config)
    message = str(raised.value)
    assert message.startswith(f"cannot resume: the task folder {folders[1]} changed since")
    assert "\n" not in message


def test_a_new_file_in_a_folder_changes_it(tmp_path: Path) -> None:
    config = write_run(tmp_path, [folder(tmp_path / "a")])
    (tmp_path / "a" / "solve.sh").write_text("x")
    with pytest.raises(ConfigError, match=r"task folder .*/a changed"):
        check_task_digests(config.output)


def test_a_removed_folder_is_refused(tmp_path: Path) -> None:
    config = write_run(tmp_path, [folder(tmp_path / "a")])
    (tmp_path / "a" / "test.sh").unlink()
    (tmp_path / "a").rmdir()
    with pytest.raises(ConfigError, match=r"task folder .*/a that rows of .* ran is gone"):
        check_task_digests(config.output)


def test_rows_without_digests_cost_nothing(tmp_path: Path) -> None:
    output = tmp_path / "out.jsonl"
    output.write_bytes(b'{"reward": 1}\n{"torn": \n')
    assert recorded_digests(output) == {}
    check_task_digests(output)
    check_task_digests(tmp_path / "missing.jsonl")


def test_a_moved_project_resumes_and_a_folder_changed_there_is_still_refused(
    tmp_path: Path,
) -> None:
    folders = [folder(tmp_path / "proj" / "a"), folder(tmp_path / "proj" / "b")]
    config = write_run(tmp_path, folders)
    (tmp_path / "proj").rename(tmp_path / "moved")
    moved = [tmp_path / "moved" / "a", tmp_path / "moved" / "b"]
    again = tmp_path / "tasks-again.jsonl"  # the rows written again where the folders are now
    rows = [
        {PARAMS: {"input": "hi"}, TASK_DIGEST: {"path": str(f), "digest": folder_digest(f)}}
        for f in moved
    ]
    again.write_bytes(b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in rows))
    resumed = dataclasses.replace(config, input=again)
    _, identity = inspect_run(RunFiles(config.output), resumed)
    assert identity["input"]["tasks_sha256"] == tasks_digest(config.input)
    inspect_run(RunFiles(config.output), config)  # the old rows: found by digest, per rollout

    (moved[1] / "test.sh").write_text("0")
    with pytest.raises(ConfigError) as raised:
        inspect_run(RunFiles(config.output), resumed)
    assert str(raised.value).startswith(f"cannot resume: the task folder {moved[1]} changed since")


def test_a_digest_the_current_rows_do_not_carry_is_refused_though_the_folder_is_gone(
    tmp_path: Path,
) -> None:
    config = write_run(tmp_path, [folder(tmp_path / "a")])
    (tmp_path / "a" / "test.sh").unlink()
    (tmp_path / "a").rmdir()
    stale = {PARAMS: {"input": "hi"}, TASK_DIGEST: {"path": "/gone/a", "digest": "sha256:00"}}
    config.input.write_bytes(orjson.dumps(stale) + b"\n")
    with pytest.raises(ConfigError, match=r"task folder /gone/a changed since its rows"):
        check_task_digests(config.output, config.input)

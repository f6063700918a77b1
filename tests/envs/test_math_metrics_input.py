"""``python -m palaestra.envs.math.metrics`` on a file it cannot read: one line, exit 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from palaestra.envs.math.metrics import main


def test_a_rollouts_file_with_a_bad_line_is_one_error_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_bytes(b'{"_ng_task_index": 0, "reward": 1.0}\n\n{"cut')
    assert main([str(rollouts)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {rollouts}:3: the last line is incomplete")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_missing_rollouts_file_is_one_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path / "none.jsonl")]) == 1
    assert (
        capsys.readouterr().err
        == f"error: cannot read {tmp_path / 'none.jsonl'}: No such file or directory\n"
    )

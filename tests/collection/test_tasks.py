from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from palaestra.collection.tasks import check_input_file, count_tasks, read_tasks, scan_input
from palaestra.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text(text)
    return path


def test_bad_rows_name_line_and_field_and_keep_their_index(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "\n".join(
            [
                '{"responses_create_params": {"input": "hi"}}',
                "",
                "{not json",
                '{"other": 1}',
                '{"responses_create_params": {"input": [{"role": "user"}]}}',
                '{"responses_create_params": {"input": [{"role": "user", "content": "ok"}]}}',
                "[1, 2]",
            ]
        )
        + "\n",
    )
    lines = list(read_tasks(path))
    assert [t.index for t in lines] == [0, 1, 2, 3, 4, 5]
    assert [t.line for t in lines] == [1, 3, 4, 5, 6, 7]
    errors = {t.line: t.error for t in lines if t.error is not None}
    assert set(errors) == {3, 4, 5, 7}
    assert errors[3].describe().startswith(f"{path}:3: not valid JSON")
    assert errors[4].field == "responses_create_params"
    assert f"{path}:4: field 'responses_create_params'" in errors[4].describe()
    assert errors[5].field == "responses_create_params.input[0].content"
    assert "JSON object" in errors[7].reason
    assert lines[4].row["responses_create_params"]["input"][0]["content"] == "ok"


def test_limit_and_count(tmp_path: Path) -> None:
    row = '{"responses_create_params": {"input": "x"}}\n'
    path = write(tmp_path, row * 5 + "\n")
    assert count_tasks(path) == 5
    assert count_tasks(path, limit=3) == 3
    assert len(list(read_tasks(path, limit=2))) == 2


def test_reading_is_lazy(tmp_path: Path) -> None:
    path = write(tmp_path, '{"responses_create_params": {"input": "x"}}\n' * 3 + "{broken\n")
    iterator = read_tasks(path)
    first = next(iterator)
    assert first.error is None  # the broken last line has not been read yet


def test_scanning_counts_tasks_and_hashes_the_whole_file(tmp_path: Path) -> None:
    row = '{"responses_create_params": {"input": "x"}}\n'
    path = write(tmp_path, row * 3 + "\n" + row)
    scan = scan_input(path, limit=2)
    assert scan.tasks == 2
    assert scan.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()  # past the limit too
    assert scan.size == path.stat().st_size
    known = {"size": scan.size, "mtime_ns": scan.mtime_ns, "sha256": "recorded"}
    assert scan_input(path, known=known).sha256 == "recorded"  # unchanged file: not re-read
    assert scan_input(path, known={**known, "size": 1}).sha256 == scan.sha256


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "holds no tasks"),
        (b"\n  \n\n", "holds no tasks"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\n" * 50, r"tasks.jsonl:3: binary data"),
    ],
)
def test_an_empty_or_binary_input_is_one_error_not_one_warning_per_line(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(content)
    with pytest.raises(ConfigError, match=message):
        scan_input(path)


def test_standard_input_or_a_pipe_is_refused_because_a_run_reads_its_input_again(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError, match=r"--input - \(standard input\) is not supported"):
        check_input_file(Path("-"))
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="is not a regular file"):
        check_input_file(fifo)
    with pytest.raises(ConfigError, match="input file not found"):
        check_input_file(tmp_path / "missing.jsonl")

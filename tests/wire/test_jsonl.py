from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest

from palaestra.errors import InputError
from palaestra.wire.jsonl import (
    NOT_JSON,
    NOT_OBJECT,
    TORN,
    BadLine,
    parse_line,
    read_objects,
    read_rows,
)


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_a_blank_line_is_no_row_but_still_counts_for_the_line_numbers(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", b'{"a": 1}\n\n   \t\r\n{"a": 2}\n')
    assert list(read_rows(path)) == [(1, {"a": 1}), (4, {"a": 2})]


def test_a_line_that_is_not_json_is_a_bad_line_naming_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", b'{"a": 1}\n{not json\n{"a": 3}\n')
    rows = list(read_rows(path))
    assert [number for number, _ in rows] == [1, 2, 3]
    bad = rows[1][1]
    assert isinstance(bad, BadLine) and bad.problem == NOT_JSON
    assert (bad.path, bad.line) == (str(path), 2)
    assert str(bad.error()).startswith(f"{path}:2: not valid JSON (")
    assert rows[2] == (3, {"a": 3})  # a bad line stops nothing: the caller decides


@pytest.mark.parametrize(
    ("line", "kind"), [(b"[1, 2]", "list"), (b"3", "int"), (b"null", "NoneType")]
)
def test_a_json_value_that_is_not_an_object_is_a_bad_line_naming_its_type(
    tmp_path: Path, line: bytes, kind: str
) -> None:
    path = write(tmp_path / "r.jsonl", b'{"a": 1}\n' + line + b"\n")
    (_, first), (number, bad) = read_rows(path)
    assert first == {"a": 1} and number == 2
    assert isinstance(bad, BadLine) and bad.problem == NOT_OBJECT and bad.detail == kind
    assert str(bad.error()) == f"{path}:2: not a JSON object (got {kind})"


def test_a_last_line_cut_short_is_torn_not_merely_invalid(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", b'{"a": 1}\n{"a": 2, "b"')
    (_, first), (number, bad) = read_rows(path)
    assert first == {"a": 1} and number == 2
    assert isinstance(bad, BadLine) and bad.problem == TORN
    assert str(bad.error()).startswith(f"{path}:2: the last line is incomplete")


def test_a_complete_last_line_without_a_newline_is_a_row_not_a_torn_one(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", b'{"a": 1}\n{"a": 2}')
    assert list(read_rows(path)) == [(1, {"a": 1}), (2, {"a": 2})]


def test_read_objects_yields_the_rows_then_raises_one_line_naming_the_bad_line(
    tmp_path: Path,
) -> None:
    path = write(tmp_path / "r.jsonl", b'{"a": 1}\n\n["x"]\n{"a": 4}\n')
    seen = []
    with pytest.raises(InputError) as raised:
        for number, row in read_objects(path):
            seen.append((number, row))
    assert seen == [(1, {"a": 1})]
    assert str(raised.value) == f"{path}:3: not a JSON object (got list)"
    assert (raised.value.path, raised.value.line) == (str(path), 3)
    assert "\n" not in str(raised.value)


def test_a_caller_may_word_the_error_and_name_the_field(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", b"oops\n")
    ((_, bad),) = read_rows(path, path="tasks.jsonl")
    assert isinstance(bad, BadLine)
    error = bad.error("not a rollout row", field="response")
    assert str(error) == "tasks.jsonl:1: field 'response': not a rollout row"
    assert error.field == "response"


def test_a_stream_is_read_from_where_it_is_and_named_by_its_name(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl.gz"
    with gzip.open(path, "wb") as out:
        out.write(b'{"a": 1}\n{"a": 2}\n[]\n')
    with (
        gzip.open(path, "rb") as stream,
        pytest.raises(InputError, match=r"data\.jsonl\.gz:3: not a JSON object"),
    ):
        list(read_objects(stream))
    stream = io.BytesIO(b'{"a": 1}\n{"a": 2}\n[]\n')  # no name of its own
    stream.readline()
    rows = list(read_rows(stream, path="mine.jsonl"))
    assert rows[0] == (1, {"a": 2})  # numbered from where the stream was
    assert isinstance(rows[1][1], BadLine)
    assert str(rows[1][1].error()) == "mine.jsonl:2: not a JSON object (got list)"


def test_parse_line_reads_one_line_as_read_rows_does() -> None:
    assert parse_line(b'{"a": 1}\n', "f", 7) == {"a": 1}
    assert parse_line(b'{"a": 1}', "f", 7) == {"a": 1}
    for raw, problem in [(b"{x\n", NOT_JSON), (b"{x", TORN), (b'"s"\n', NOT_OBJECT)]:
        bad = parse_line(raw, "f", 7)
        assert isinstance(bad, BadLine) and (bad.problem, bad.path, bad.line) == (problem, "f", 7)


def test_a_missing_file_raises_when_read_not_when_asked_for(tmp_path: Path) -> None:
    rows = read_rows(tmp_path / "none.jsonl")
    with pytest.raises(FileNotFoundError):
        next(rows)

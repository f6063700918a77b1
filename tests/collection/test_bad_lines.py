"""A run's files with a line that is not a row: one error naming file and line, not a trace."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from palaestra.collection.aggregate import RunMetrics
from palaestra.collection.files import failed_attempts, finished_pairs, keep_dispatched
from palaestra.errors import InputError

ROW = {"_ng_task_index": 0, "_ng_rollout_index": 0, "reward": 1.0, "response": {}}


def lines(path: Path, *rows: bytes) -> Path:
    path.write_bytes(b"".join(row + b"\n" for row in rows))
    return path


def test_a_failure_history_line_that_is_not_json_stops_the_resume_in_one_line(
    tmp_path: Path,
) -> None:
    history = lines(tmp_path / "h.jsonl", orjson.dumps(ROW), b"{oops")
    with pytest.raises(InputError) as raised:
        failed_attempts(history)
    message = str(raised.value)
    assert message.startswith(f"{history}:2: field '_ng_task_index/_ng_rollout_index': ")
    assert "cannot resume: not a rollout row (not valid JSON" in message


def test_a_failure_history_line_that_is_not_an_object_stops_the_resume(tmp_path: Path) -> None:
    history = lines(tmp_path / "h.jsonl", b"[1, 2]")
    with pytest.raises(InputError, match=r"h\.jsonl:1: .*not a JSON object \(got list\)"):
        failed_attempts(history)


def test_a_failure_without_a_rollout_index_is_not_an_attempt(tmp_path: Path) -> None:
    unread = {"_ng_task_index": 3, "_ng_rollout_index": None, "failure": {"kind": "x"}}
    history = lines(tmp_path / "h.jsonl", orjson.dumps(ROW), b"", orjson.dumps(unread))
    assert failed_attempts(history) == {(0, 0): 1}


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (b'{"_ng_rollout_index": 0}', "missing '_ng_task_index'"),
        (b'{"_ng_task_index": null, "_ng_rollout_index": 0}', "int() argument must be"),
        (b'"text"', "not a JSON object (got str)"),
    ],
)
def test_an_output_line_that_is_not_a_rollout_says_why(
    tmp_path: Path, row: bytes, reason: str
) -> None:
    output = lines(tmp_path / "o.jsonl", orjson.dumps(ROW), row)
    with pytest.raises(InputError) as raised:
        finished_pairs(output)
    assert str(raised.value).startswith(f"{output}:2: ")
    assert f"cannot resume: not a rollout row ({reason}" in str(raised.value)


def test_keeping_dispatched_rows_names_a_bad_line_and_keeps_the_file(tmp_path: Path) -> None:
    dispatched = lines(tmp_path / "m.jsonl", orjson.dumps(ROW), b"", b"{cut")
    before = dispatched.read_bytes()
    with pytest.raises(InputError, match=r"m\.jsonl:3: .*not valid JSON"):
        keep_dispatched(dispatched, {(0, 0)})
    assert dispatched.read_bytes() == before
    assert list(tmp_path.iterdir()) == [dispatched]


def test_the_aggregate_of_a_file_with_a_bad_line_is_one_error_naming_it(tmp_path: Path) -> None:
    output = lines(tmp_path / "o.jsonl", orjson.dumps(ROW), b"[]")
    with pytest.raises(InputError, match=r"^.*o\.jsonl:2: not a JSON object \(got list\)$"):
        RunMetrics.read(output, tmp_path / "o_failures.jsonl")
    failures = lines(tmp_path / "f.jsonl", b"{no")
    with pytest.raises(InputError, match=r"f\.jsonl:1: not valid JSON"):
        RunMetrics.read(tmp_path / "none.jsonl", failures)

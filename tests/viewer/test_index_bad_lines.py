"""The viewer's index names each line that is not a row, in the words every reader uses."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from palaestra.errors import InputError
from palaestra.viewer.index import RunIndex
from tests.viewer.rows import scored


def test_an_unreadable_line_says_what_it_is_and_a_blank_line_is_no_row(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    good = orjson.dumps(scored(0, "Oslo", 1.0))
    path.write_bytes(good + b"\n\n[1, 2]\n{oops\n" + good + b"\n")
    index = RunIndex(path)
    assert len(index) == 2 and index.where(1)["line"] == 5
    first, second = index.summary()["unreadable"]
    assert (first["line"], first["why"]) == (3, "not a JSON object (got list)")
    assert second["line"] == 4 and second["why"].startswith("not valid JSON (")


def test_a_file_of_no_rows_is_refused_in_one_line_naming_the_first_bad_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text("\n42\n")
    with pytest.raises(InputError) as raised:
        RunIndex(path)
    assert str(raised.value) == f"{path}:2: not a rollouts file: not a JSON object (got int)"

"""The manifest: a bad line is one error naming the file, the line and the field; lines are
written sorted and sealed, and merged per repository."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from palaestra.envs.swe_local import manifest
from palaestra.errors import ConfigError
from tests.envs.swe_local.lines import line


def _write(path: Path, *rows: Any) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_the_digest_is_of_the_canonical_line_without_it() -> None:
    sealed = line()
    assert sealed["digest"] == manifest.digest(sealed)
    reordered = dict(reversed(list(sealed.items())))
    assert manifest.digest(reordered) == sealed["digest"]
    assert manifest.digest({**sealed, "seed": 1}) != sealed["digest"]


@pytest.mark.parametrize(
    ("change", "field", "says"),
    [
        ({"FAIL_TO_PASS": []}, "FAIL_TO_PASS", "non-empty list of test ids"),
        ({"language": 3}, "language", "language name"),
        ({"base_tree": "abc"}, "base_tree", "40 hex digits"),
        ({"difficulty": {"lines": 1, "files": 1, "level": "trivial"}}, "difficulty", "level"),
        ({"kinds": ["compare"]}, "kinds", "single mutation"),
        ({"instance_id": "sympy__x__y__00000000"}, "instance_id", "repository's name"),
        ({"test_seconds": True}, "test_seconds", "number of seconds"),
        ({"measured": "yes"}, "measured", "true or false"),
    ],
)
def test_a_bad_field_is_named_with_its_file_and_line(
    tmp_path: Path, change: dict[str, Any], field: str, says: str
) -> None:
    bad = line(**{"instance_id": "mpmath__z__z__1", **change})
    path = _write(tmp_path / "mpmath.jsonl", line(), bad)
    with pytest.raises(ConfigError) as raised:
        manifest.read_file(path)
    message = str(raised.value)
    assert message.startswith(f"{path}:2: field '{field}'") and says in message
    assert "\n" not in message


def test_a_missing_flag_a_hand_edit_and_a_non_object_are_refused(tmp_path: Path) -> None:
    no_flag = line()
    del no_flag["flags"]["off_target"]
    edited = {**line(), "seed": 5}  # the digest no longer matches
    for row, expected in (
        (no_flag, "field 'flags' 'off_target' is missing"),
        (edited, "field 'digest' does not match"),
        ([1, 2], "the line is not a JSON object"),
    ):
        path = _write(tmp_path / "mpmath.jsonl", row)
        with pytest.raises(ConfigError, match=f"^{path}:1: {expected}"):
            manifest.read_file(path)
    path = tmp_path / "mpmath.jsonl"
    path.write_text("{not json\n")
    with pytest.raises(ConfigError, match=f"^{path}:1: not JSON"):
        manifest.read_file(path)


def test_a_line_in_another_repositorys_file_or_out_of_order_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "sympy.jsonl", line())
    with pytest.raises(ConfigError, match=r"field 'repo' is 'mpmath' in sympy\.jsonl"):
        manifest.read_file(path)
    second = line(instance_id="mpmath__a__a__1")
    path = _write(tmp_path / "mpmath.jsonl", line(), second)
    with pytest.raises(ConfigError, match=f"^{path}:2: field 'instance_id' is out of order"):
        manifest.read_file(path)


def test_add_merges_sorted_and_replaces_a_line_with_the_same_id(tmp_path: Path) -> None:
    assert manifest.add(tmp_path, [line(instance_id="mpmath__b__b__1"), line()]) == 2
    assert manifest.add(tmp_path, [line(seed=9), line(repo="sympy", instance_id="sympy__a__a__1")])
    lines = manifest.read_directory(tmp_path)
    assert [row["instance_id"] for row in lines] == [
        "mpmath__b__b__1",
        "mpmath__demo__half__0123abcd",
        "sympy__a__a__1",
    ]
    assert lines[1]["seed"] == 9
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mpmath.jsonl", "sympy.jsonl"]


def test_the_shipped_manifest_reads() -> None:
    lines = manifest.read_directory()
    assert len(lines) >= 200
    assert {row["language"] for row in lines} >= {"python"}


def test_the_generator_and_recheck_name_a_bad_line_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from palaestra.envs.swe_local import generate, recheck

    bad = {**line(), "seed": 5}  # edited by hand: the digest no longer matches
    path = _write(tmp_path / "mpmath.jsonl", bad)
    arguments = ["--from-manifest", str(tmp_path), "--variant-of", "x"]
    assert generate.main(arguments) == 2
    assert recheck.main(["--manifest", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert (
        err
        == [
            f"error: {path}:1: field 'digest' does not match the line's content "
            "(edited by hand? reseal it)"
        ]
        * 2
    )

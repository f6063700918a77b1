"""``palaestra serve ors``: its splits from the command line, a mistake in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.support.unscorable_env import TASK

UNSCORABLE = str(Path(__file__).resolve().parents[1] / "support" / "unscorable_env.py")


def refusal(*args: str, cwd: Path) -> str:
    """What ``palaestra serve ors ARGS`` says when it refuses to start: its one line."""
    done = subprocess.run(
        [sys.executable, "-m", "palaestra", "serve", "ors", *args, "--port", "0"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("split", "said"),
    [
        ("test", "--split 'test': write NAME=FILE"),
        ("test=missing.jsonl", "--split test: no task file at missing.jsonl"),
    ],
)
def test_a_wrong_split_option_is_refused_in_one_line(split: str, said: str, tmp_path: Path) -> None:
    assert said in refusal("counter", "--split", split, cwd=tmp_path)


def test_an_environment_with_no_tasks_to_serve_is_refused_in_one_line(tmp_path: Path) -> None:
    said = refusal(UNSCORABLE, cwd=tmp_path)
    assert "has no example tasks: serve a task file (--tasks FILE, or --split" in said


def test_a_bad_line_of_a_split_file_is_refused_naming_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "train.jsonl").write_text(orjson.dumps(TASK).decode() + "\n{not json\n")
    said = refusal(UNSCORABLE, "--split", "train=train.jsonl", cwd=tmp_path)
    assert said.lower().startswith("error: train.jsonl:2: not valid json")

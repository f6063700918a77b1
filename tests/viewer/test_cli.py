"""``palaestra view`` as a user runs it: the printed URL, the token, one-line errors."""

from __future__ import annotations

import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import orjson

from tests.viewer.rows import small_run


def palaestra(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "palaestra", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_view_prints_its_url_with_the_token_and_serves_only_with_it(tmp_path: Path) -> None:
    run = small_run(tmp_path / "run.jsonl")
    token_file = tmp_path / "token"
    token_file.write_text("t0ken\n")
    process = palaestra("view", str(run), "--port", "0", "--token-file", str(token_file))
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("viewing on http://127.0.0.1:"), line
        url = line.split()[2]
        assert url.endswith("/?token=t0ken")
        base = url.removesuffix("/?token=t0ken")
        with urllib.request.urlopen(f"{base}/api/runs?token=t0ken", timeout=10) as answer:
            runs = orjson.loads(answer.read())["runs"]
        assert runs[0]["summary"]["rows"] == 15
        try:
            urllib.request.urlopen(f"{base}/api/runs", timeout=10)
            raise AssertionError("served without the token")
        except urllib.error.HTTPError as error:
            assert error.code == 401
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=15)
    assert f"indexed {run}: 15 rows (12 scored, 3 failed)" in err
    assert process.returncode == 0  # Ctrl-C closes a viewer: no error, no resume hint
    assert "resume" not in err


def test_a_file_that_does_not_exist_is_one_line_and_exit_status_1(tmp_path: Path) -> None:
    process = palaestra("view", str(tmp_path / "nope.jsonl"))
    _, err = process.communicate(timeout=30)
    assert process.returncode == 1
    assert err.strip() == f"error: {tmp_path / 'nope.jsonl'}: no such rollouts file"


def test_more_than_two_files_are_refused(tmp_path: Path) -> None:
    run = str(small_run(tmp_path / "run.jsonl"))
    process = palaestra("view", run, run, run)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 1
    assert "view one rollouts file, or two to compare them" in err

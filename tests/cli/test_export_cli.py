"""``palaestra export --format atif``, and ``view``, ``verify``, ``report`` reading ATIF files.

The run is a real one: ``palaestra collect`` on the counter environment against the scripted
model over HTTP (a tool call, its output, a final answer). Its ATIF export is read back by the
commands that read runs, and they say what they say of the JSONL run itself.
"""

from __future__ import annotations

import signal
import urllib.request
from pathlib import Path

import orjson

from palaestra.wire.atif import from_trajectory
from tests.cli.test_collect_cli import run_cli
from tests.cli.test_verify_cli import collect_counter
from tests.viewer.rows import small_run
from tests.viewer.test_cli import palaestra


def test_a_collected_run_exports_to_atif_and_reads_back_in_verify_and_report(
    tmp_path: Path,
) -> None:
    run = collect_counter(tmp_path)
    rows = [orjson.loads(line) for line in run.read_bytes().splitlines()]
    done = run_cli("export", "c.jsonl", "--format", "atif", "--output", "atif", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"wrote {len(rows)} ATIF trajectories ({len(rows)} scored, 0 failed)" in done.stderr
    for row in rows:
        path = tmp_path / "atif" / f"task{row['_ng_task_index']}_rollout0.json"
        assert from_trajectory(orjson.loads(path.read_bytes())) == row

    verified = run_cli("verify", "atif", "--env", "counter", cwd=tmp_path)
    assert verified.returncode == 0, verified.stderr
    assert f"re-verified {len(rows)} rollouts: {len(rows)} unchanged" in verified.stdout

    theirs = run_cli("report", "c.jsonl", cwd=tmp_path)
    ours = run_cli("report", "atif", cwd=tmp_path)
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout.splitlines()[:2] == theirs.stdout.splitlines()[:2]
    assert (tmp_path / "atif_report.md").is_file() and (tmp_path / "atif_report.html").is_file()

    again = run_cli("export", "c.jsonl", "--format", "atif", "--output", "atif", cwd=tmp_path)
    assert again.returncode == 1
    assert (
        again.stderr.strip() == "error: atif exists and is not an empty directory: name a new one"
    )


def test_the_viewer_reads_an_atif_directory_with_its_failures(tmp_path: Path) -> None:
    small_run(tmp_path / "run.jsonl")
    done = run_cli("export", "run.jsonl", "--format", "atif", "--output", "out", cwd=tmp_path)
    assert "(12 scored, 3 failed)" in done.stderr, done.stderr
    process = palaestra("view", str(tmp_path / "out"), "--port", "0")
    try:
        assert process.stdout is not None
        url = process.stdout.readline().split()[2]
        with urllib.request.urlopen(f"{url.rstrip('/')}/api/runs", timeout=10) as answer:
            summary = orjson.loads(answer.read())["runs"][0]["summary"]
        assert (summary["rows"], summary["scored"], summary["failed"]) == (15, 12, 3)
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=15)
    assert f"indexed {tmp_path / 'out'}: 15 rows (12 scored, 3 failed)" in err


def test_a_file_that_is_neither_rows_nor_atif_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes.json").write_text('{"title": "my notes"}\n')
    for command in (["report", "notes.json"], ["verify", "notes.json", "--env", "counter"]):
        done = run_cli(*command, cwd=tmp_path)
        assert done.returncode == 1
        assert done.stderr.strip() == (
            "error: notes.json: neither a rollouts JSONL file nor an ATIF trajectory (its first "
            "line is not a rollout row, nor is the file one trajectory)"
        )
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "a.json").write_text('{"schema_version": "ATIF-v1.7", "steps": []}')
    (tmp_path / "dir" / "b.json").write_text("[1, 2]")
    done = run_cli("report", "dir", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().startswith("error: dir/b.json:") and "not an ATIF" in done.stderr

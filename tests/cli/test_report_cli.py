"""``palaestra report`` and ``collect --report`` as a user runs them: real processes, mcqa
against a scripted model over real HTTP (task 0 answered wrong, task 1 a 400)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_collect_cli import run_cli
from tests.cli.test_compare_cli import answer
from tests.evaluate.synthetic import write_run
from tests.support.scripted_model import ScriptedModelServer


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A run made with ``collect --report`` (its directory) and what collect printed."""
    where = tmp_path_factory.mktemp("reported")
    with ScriptedModelServer(lambda params: answer(params, worse=True)) as server:
        args = ["--env", "mcqa", "--model", server.url, "--repeats", "2", "--report"]
        done = run_cli("collect", *args, "--output", "run.jsonl", cwd=where)
    assert done.returncode == 0, done.stderr
    return where, done.stdout


def test_collect_report_writes_the_report_and_says_where(collected: tuple[Path, str]) -> None:
    where, stdout = collected
    assert "report: run_report.md" in stdout and "run_report.html" in stdout
    assert "5 tasks, 10 rollouts: 8 scored, 2 failed (2 masked)." in stdout
    markdown = (where / "run_report.md").read_text()
    assert "| mean reward | 0.7500 | [0.3006, 0.9544] | wilson | 4 | 8 | 2 (excluded) |" in markdown
    assert "too long" in markdown and (where / "run_report.html").is_file()


def test_report_prints_the_headline_and_rewrites_the_files(
    collected: tuple[Path, str], tmp_path: Path
) -> None:
    where, _ = collected
    done = run_cli(
        "report",
        str(where / "run.jsonl"),
        "--failures-as-zero",
        "--markdown",
        "zero.md",
        "--html",
        "zero.html",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "mean reward  0.6000 [" in done.stdout and "2 failed (as 0)" in done.stdout
    assert "report: zero.md" in done.stdout
    assert "read as reward 0" in (tmp_path / "zero.md").read_text()
    assert "<svg" in (tmp_path / "zero.html").read_text()


def test_report_mistakes_are_one_line(collected: tuple[Path, str], tmp_path: Path) -> None:
    where, _ = collected
    missing = run_cli("report", "nope.jsonl", cwd=tmp_path)
    assert missing.returncode == 1
    assert (
        missing.stderr.strip()
        == "error: no run at nope.jsonl: not a file (pass the rollouts JSONL)"
    )
    run = str(where / "run.jsonl")
    several = run_cli("report", run, run, cwd=tmp_path)
    assert several.returncode == 1
    assert "several runs make one report: give --markdown and --html" in several.stderr
    both = run_cli("report", run, run, "--markdown", "b.md", "--html", "b.html", cwd=tmp_path)
    assert both.returncode == 0, both.stderr
    assert "overall: mean reward" in both.stdout


def test_report_skips_a_torn_last_line_with_a_warning_naming_the_file_and_line(
    tmp_path: Path,
) -> None:
    out = write_run(tmp_path / "live.jsonl", {t: [1.0, "timeout"] for t in range(3)})
    out.write_bytes(out.read_bytes() + b'{"_ng_task_index": 3, "reward": 1')
    failures = tmp_path / "live_failures.jsonl"
    failures.write_bytes(failures.read_bytes() + b'{"_ng_task_index": 1, "fail')
    done = run_cli("report", "live.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"warning: {name}:4: the last line is incomplete (a run still writing, or killed "
        "mid-write) and was skipped"
        for name in ("live.jsonl", "live_failures.jsonl")
    ]
    assert "report: live_report.md" in done.stdout
    middle = tmp_path / "middle.jsonl"
    middle.write_bytes(out.read_bytes().replace(b"\n", b"\n{oops\n", 1))
    broken = run_cli("report", "middle.jsonl", cwd=tmp_path)
    assert broken.returncode == 1
    assert broken.stderr.startswith("error: middle.jsonl:2: not JSON")


def test_a_run_with_no_rollouts_is_one_line_and_writes_no_report(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("\n")
    (tmp_path / "empty_failures.jsonl").write_text("")
    done = run_cli("report", "empty.jsonl", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "error: empty.jsonl holds no rollouts, nor does its failures file: nothing to report"
    )
    assert not (tmp_path / "empty_report.md").exists()

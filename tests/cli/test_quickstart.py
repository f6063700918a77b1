"""The first run a newcomer sees (``scripts/quickstart.sh``): a verifier that discriminates.

The quickstart's own ``palaestra collect`` command, read from the script, runs with the real
embedded model: some rollouts must score 1 and some 0 (a constant reward would teach nothing),
and the summary must give the mean with its interval and say how to read the rollouts.
"""

from __future__ import annotations

import io
import re
import shlex
from pathlib import Path

import pytest
from rich.console import Console

from palaestra.cli.progress import summary_table
from palaestra.collection.collector import RunSummary
from palaestra.collection.files import RunFiles
from tests.cli.test_collect_cli import rows, run_cli
from tests.models.test_local import needs_local

QUICKSTART = Path(__file__).resolve().parents[2] / "scripts" / "quickstart.sh"
INTERVAL = re.compile(r"mean reward\s+│?\s*(\d\.\d{4}) \[(\d\.\d{4}), (\d\.\d{4})\]\s+n=10 tasks")


def quickstart_command() -> list[str]:
    """The arguments of the script's ``palaestra`` command (without ``"$@"``)."""
    for line in QUICKSTART.read_text(encoding="utf-8").splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0].endswith("bin/palaestra"):
            return [word for word in words[1:] if word != "$@"]
    raise AssertionError(f"no palaestra command in {QUICKSTART}")


def test_the_quickstart_collects_the_calculator_tasks_with_the_embedded_model() -> None:
    args = quickstart_command()
    assert args[:3] == ["collect", "--env", "calculator"]
    assert "--model" not in args  # the embedded model is the default: no key, no server


def test_the_summary_names_the_command_that_shows_the_rollouts(tmp_path: Path) -> None:
    summary = RunSummary(done=1, files=RunFiles(tmp_path / "my run.jsonl"))
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(summary_table(summary, 1.0))
    assert f"palaestra view '{tmp_path / 'my run.jsonl'}'" in console.export_text()


@pytest.mark.local_model
@needs_local
def test_the_quickstart_run_scores_some_rollouts_right_and_some_wrong(tmp_path: Path) -> None:
    done = run_cli(*quickstart_command(), cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    scored = rows(tmp_path / "runs" / "calculator.jsonl")
    assert len(scored) == 10 and not rows(tmp_path / "runs" / "calculator_failures.jsonl")
    rewards = [row["reward"] for row in scored]
    assert 1.0 in rewards and 0.0 in rewards, rewards  # temperature 0: the same every run
    for row in scored:  # the reward is the exact comparison the metrics record
        right = row["given_answer"] == row["expected_answer"]
        assert row["reward"] == (1.0 if right else 0.0), row["given_answer"]
    shown = INTERVAL.search(done.stdout)
    assert shown, done.stdout
    mean, low, high = (float(value) for value in shown.groups())
    assert mean == pytest.approx(sum(rewards) / 10, abs=1e-4)
    assert 0.0 < low < mean < high < 1.0
    assert "palaestra view runs/calculator.jsonl" in done.stdout

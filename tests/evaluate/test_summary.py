"""The end-of-run figures of ``collect``, from the counts the collector keeps."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from palaestra.collection.aggregate import RunMetrics
from palaestra.evaluate import load_run, run_figures
from palaestra.evaluate.summary import running_figures, t_quantile


@pytest.mark.parametrize("df", [1, 2, 3, 4, 7, 10, 29, 30, 57, 199, 200, 1000, 100_000])
@pytest.mark.parametrize("p", [0.6, 0.9, 0.975, 0.995])
def test_the_t_quantile_matches_scipys(df: int, p: float) -> None:
    from scipy import special  # type: ignore[import-untyped]

    expected = float(special.stdtrit(df, p))
    assert t_quantile(p, df) == pytest.approx(expected, rel=1e-7)
    assert t_quantile(1 - p, df) == pytest.approx(-expected, rel=1e-7)


def _write_run(tmp_path: Path, *, tasks: int, repeats: int, seed: int) -> Path:
    """A run of ``tasks`` x ``repeats`` with some failures and continuous and 0/1 rewards."""
    rng = random.Random(seed)
    output, failures = tmp_path / "run.jsonl", tmp_path / "run_failures.jsonl"
    with output.open("wb") as rows, failures.open("wb") as failed:
        for task in range(tasks):
            for rollout in range(repeats):
                base = {"_ng_task_index": task, "_ng_rollout_index": rollout}
                if rng.random() < 0.15:
                    failure = {"kind": "model_error", "reason": "x", "masked": rng.random() < 0.5}
                    failed.write(orjson.dumps({**base, "failure": failure}) + b"\n")
                    continue
                reward = rng.choice([0.0, 1.0, 1.0, rng.random()])
                rows.write(orjson.dumps({**base, "reward": reward}) + b"\n")
    return output


@pytest.mark.parametrize("failures_as_zero", [False, True])
@pytest.mark.parametrize("repeats", [1, 3])
def test_the_running_figures_equal_the_figures_of_the_files_read_back(
    tmp_path: Path, repeats: int, failures_as_zero: bool
) -> None:
    output = _write_run(tmp_path, tasks=60, repeats=repeats, seed=repeats)
    metrics = RunMetrics.read(output, tmp_path / "run_failures.jsonl")
    quick = running_figures(
        metrics.task_counts,
        metrics.failed_by_task,
        failed=sum(metrics.failure_kinds.values()),
        masked=metrics.masked,
        failures_as_zero=failures_as_zero,
    )
    full = run_figures(load_run(output), failures_as_zero=failures_as_zero)
    assert [f.name for f in quick] == [
        f.name for f in full.figures if f.name == "mean reward" or f.name.startswith("pass")
    ]
    for figure in quick:
        read_back = full.figure(figure.name)
        assert figure.value == pytest.approx(read_back.value)
        assert (figure.tasks, figure.rollouts) == (read_back.tasks, read_back.rollouts)
        assert (figure.failed, figure.masked) == (read_back.failed, read_back.masked)
        assert figure.reading == read_back.reading and figure.note == read_back.note
        assert figure.interval is not None and read_back.analytic is not None
        assert figure.interval.method == read_back.analytic.method
        assert figure.interval.low == pytest.approx(read_back.analytic.low)
        assert figure.interval.high == pytest.approx(read_back.analytic.high)


def test_the_end_of_run_figures_need_neither_numpy_nor_a_read_back(tmp_path: Path) -> None:
    output = _write_run(tmp_path, tasks=40, repeats=2, seed=7)
    script = f"""
import sys
from pathlib import Path
from palaestra.collection.collector import RunSummary
from palaestra.collection.aggregate import RunMetrics
from palaestra.cli.progress import figures_rows
output = Path({str(output)!r})
metrics = RunMetrics.read(output, output.with_name("run_failures.jsonl"))
output.unlink()  # the figures must not read the file back
rows, note = figures_rows(RunSummary(metrics=metrics), failures_as_zero=False)
assert [name for name, _ in rows] == ["mean reward", "pass@1", "pass@2", "pass^2"], rows
assert all("[" in text and "n=" in text for _, text in rows), rows
assert "numpy" not in sys.modules and "scipy" not in sys.modules
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr

"""RichProgress: coalesced updates, and the final state always shown."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from rich.console import Console

from palaestra.cli.progress import RichProgress, summary_table
from palaestra.collection.aggregate import RunMetrics
from palaestra.collection.collector import RunSummary
from palaestra.collection.files import RunFiles
from palaestra.evaluate import run_figures
from palaestra.transport import unix_url
from tests.evaluate.synthetic import write_run


def finish(progress: RichProgress, summary: RunSummary, rollouts: int) -> None:
    for _ in range(rollouts):
        summary.done += 1
        summary.reward_sum += 1.0
        progress.update(summary)


def test_the_final_count_is_shown_although_rapid_updates_are_coalesced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    output = io.StringIO()
    progress = RichProgress(Console(file=output, width=120))
    drawn: list[int] = []
    real_update = progress._bar.update

    def counted(*args: object, **kwargs: object) -> None:
        drawn.append(int(kwargs.get("completed", -1)))  # type: ignore[call-overload]
        real_update(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(progress._bar, "update", counted)
    summary = RunSummary(total=500)
    progress.start(summary)
    finish(progress, summary, 500)
    progress.stop()
    assert len(drawn) < 10  # 500 updates within a fraction of a second
    assert drawn[-1] == 500
    assert "500/500" in output.getvalue()


def summary_text(summary: RunSummary, *, failures_as_zero: bool = False) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(summary_table(summary, 1.0, failures_as_zero=failures_as_zero))
    return console.export_text()


def test_the_summary_shows_each_figure_with_its_interval_n_and_failures(tmp_path: Path) -> None:
    outcomes: dict[int, list[float | str | None]] = {t: [float(t % 2), 1.0] for t in range(20)}
    outcomes[3] = [1.0, "timeout"]
    out = write_run(tmp_path / "r.jsonl", outcomes)
    summary = RunSummary(done=39, files=RunFiles(out))
    summary.count_failure("timeout", "slow")
    left_out = summary_text(summary)
    expected = run_figures(out).figure("mean reward")
    assert expected.interval is not None
    low, high = expected.interval.low, expected.interval.high
    assert f"{expected.value:.4f} [{low:.4f}, {high:.4f}]  n=20 tasks" in left_out
    assert "n=20 tasks/39 rollouts, 1 failed (excluded)" in left_out
    assert "pass@2" in left_out and "pass^2" in left_out
    assert "not counted as reward 0" in left_out
    as_zero = summary_text(summary, failures_as_zero=True)
    assert "n=20 tasks/40 rollouts, 1 failed (as 0)" in as_zero
    assert "1 (timeout 1) — counted as reward 0" in as_zero


def test_the_summary_lists_the_endpoints_of_a_pool_but_not_a_single_one(tmp_path: Path) -> None:
    summary = RunSummary(done=1, files=RunFiles(write_run(tmp_path / "r.jsonl", {0: [1.0]})))
    one = {"url": "http://a:1/v1", "calls": 7, "failures": 0, "latency_p50": 0.25}
    summary.endpoints = [one]
    assert "model endpoints" not in summary_text(summary)
    summary.endpoints = [one, {**one, "url": "http://b:2/v1", "calls": 3, "failures": 2}]
    text = summary_text(summary)
    assert "model endpoints" in text
    assert "http://b:2/v1" in text and "latency p50" in text


def test_a_pools_endpoint_on_a_unix_socket_is_listed_by_its_socket_path(tmp_path: Path) -> None:
    summary = RunSummary(done=1, files=RunFiles(write_run(tmp_path / "r.jsonl", {0: [1.0]})))
    urls = [unix_url(f"/run/s/{name}.sock") + "/v1" for name in ("a", "b")]
    summary.endpoints = [{"url": url, "calls": 1, "failures": 0} for url in urls]
    text = summary_text(summary)
    assert "unix:/run/s/a.sock/v1" in text and "unix:/run/s/b.sock/v1" in text
    assert "%2F" not in text
    assert [entry["url"] for entry in summary.endpoints] == urls  # the summary's own unchanged


def test_a_summary_whose_output_cannot_be_read_says_so_instead_of_failing(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    out.write_bytes(b'{"_ng_task_index": 0, "reward": 1.0}\nnot json\n')
    summary = RunSummary(done=1, reward_sum=1.0, files=RunFiles(out))
    text = summary_text(summary)
    assert "1.0000 over the file's scored rollouts" in text
    assert "no intervals:" in text and "r.jsonl:2" in text


def test_the_interval_note_is_two_short_lines_on_an_80_column_terminal(tmp_path: Path) -> None:
    out = write_run(tmp_path / "r.jsonl", {t: [float(t % 2)] for t in range(10)})
    counted = RunMetrics()  # the collector's own counts: its figures without a re-read
    for line in out.read_bytes().splitlines():
        counted.add_rollout(orjson.loads(line))
    for summary in (RunSummary(done=10, files=RunFiles(out)), RunSummary(done=10)):
        summary.metrics = None if summary.files else counted
        console = Console(width=80, record=True, file=io.StringIO())
        console.print(summary_table(summary, 1.0))
        lines = console.export_text().splitlines()
        start = next(n for n, line in enumerate(lines) if "95% interval" in line)
        note = [start]
        for n in range(start + 1, len(lines)):  # the row goes on while its first cell is empty
            cells = lines[n].split("│")
            if len(cells) < 3 or cells[1].strip():
                break
            note.append(n)
        shown = " ".join(lines[n].split("│")[2].strip() for n in note)
        assert len(note) <= 2, "\n".join(lines)
        assert "over tasks" in shown and "failures left out" in shown, shown

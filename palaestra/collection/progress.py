"""Showing a run: a live progress bar while it runs and a summary table when it ends."""

from __future__ import annotations

import time

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from palaestra.collection.collector import RunSummary


class RichProgress:
    """The collector's ``Progress`` on a terminal: done/total, rollouts/s, mean reward, failures.

    The bar is redrawn ten times a second, so it is updated at most every ``REFRESH`` seconds:
    updating rich's task for every rollout cost 15% of a trivial rollout's CPU.
    """

    REFRESH = 0.1

    def __init__(self, console: Console) -> None:
        self.console = console
        self._bar = Progress(
            TextColumn("[bold]collect[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]:>6.1f} rollouts/s"),
            TextColumn("mean reward {task.fields[reward]}"),
            TextColumn("failures {task.fields[failures]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self._task = self._bar.add_task("collect", total=None, rate=0.0, reward="-", failures=0)
        self._started = time.perf_counter()
        self._finished_at_start = 0
        self._shown_at = 0.0
        self._summary: RunSummary | None = None

    def start(self, summary: RunSummary) -> None:
        self._finished_at_start = summary.skipped
        self._started = time.perf_counter()
        self._bar.update(self._task, total=summary.total, completed=summary.skipped)
        self._bar.start()

    def update(self, summary: RunSummary) -> None:
        self._summary = summary
        now = time.perf_counter()
        if now - self._shown_at >= self.REFRESH:
            self._shown_at = now
            self._show(summary, now)

    def _show(self, summary: RunSummary, now: float) -> None:
        finished = summary.done + summary.failed
        elapsed = max(now - self._started, 1e-9)
        mean = summary.mean_reward
        self._bar.update(
            self._task,
            completed=summary.skipped + finished,
            rate=finished / elapsed,
            reward="-" if mean is None else f"{mean:.3f}",
            failures=summary.failed,
        )

    def message(self, text: str) -> None:
        self.console.print(f"[yellow]warning:[/] {escape(text)}", highlight=False, soft_wrap=True)

    def stop(self) -> None:
        if self._summary is not None:
            self._show(self._summary, time.perf_counter())  # the last updates were skipped
        self._bar.stop()


SHOWN_REASONS = 5


def summary_table(summary: RunSummary, elapsed: float) -> Table:
    """The run's figures: the whole output file first, then this invocation's, labelled."""
    table = Table(title="palaestra collect", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    finished = summary.done + summary.failed
    table.add_row("rollouts scored", f"{summary.scored} in the output file")
    mean = summary.mean_reward
    table.add_row(
        "mean reward", "-" if mean is None else f"{mean:.4f} over the file's scored rollouts"
    )
    truncated = 0
    for number, entry in enumerate(summary.aggregate):
        key_metrics = entry.get("key_metrics", {})
        truncated += int(key_metrics.get("truncated", 0))
        if number == 0:
            for key, value in key_metrics.items():
                if key.startswith("pass@"):
                    table.add_row(key, f"{value:.4f}")
    if truncated:
        table.add_row("hit --max-steps", f"{truncated} scored rollouts (_palaestra.truncated)")
    if summary.skipped:
        table.add_row("already done (resumed)", str(summary.skipped))
    this_run = f"{summary.done} scored, {summary.failed} failed"
    if summary.truncated:
        this_run += f", {summary.truncated} hit --max-steps"
    table.add_row("this run", this_run)
    table.add_row("failures", _failures_text(summary))
    reasons = summary.reasons.most_common(SHOWN_REASONS)
    if reasons:
        lines = [f"{count:>6}  {escape(reason)}" for reason, count in reasons]
        if len(summary.reasons) > SHOWN_REASONS:
            lines.append(f"... {len(summary.reasons) - SHOWN_REASONS} more reasons")
        table.add_row("why", "\n".join(lines))
    table.add_row("throughput", f"{finished / max(elapsed, 1e-9):.2f} rollouts/s ({elapsed:.1f} s)")
    if summary.files is not None:
        table.add_row("output", str(summary.files.output))
        table.add_row("failures file", str(summary.files.failures))
        table.add_row("metrics", str(summary.files.aggregate_metrics))
    if summary.stopped_reason:
        table.add_row("[red]stopped[/]", escape(summary.stopped_reason))
    return table


def _failures_text(summary: RunSummary) -> str:
    total = summary.failed
    if not total:
        return "0"
    kinds = ", ".join(f"{kind} {count}" for kind, count in summary.failures.most_common())
    return f"{total} ({kinds}) — not counted as reward 0"

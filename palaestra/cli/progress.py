"""Showing a run: a live progress bar while it runs and a summary table when it ends."""

from __future__ import annotations

import shlex
import time
from collections import Counter

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from palaestra.collection.collector import RunSummary
from palaestra.transport import shown_url
from palaestra.types import JsonDict


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

    def note(self, text: str) -> None:
        """Something the run says that is not a warning (the metrics URL, once bound)."""
        self.console.print(escape(text), highlight=False, soft_wrap=True)

    def stop(self) -> None:
        if self._summary is not None:
            self._show(self._summary, time.perf_counter())  # the last updates were skipped
        self._bar.stop()


SHOWN_REASONS = 5


def summary_table(summary: RunSummary, elapsed: float, *, failures_as_zero: bool = False) -> Table:
    """The run's figures: the whole output file first, then this invocation's, labelled.

    The figures (mean reward, pass@k, pass^k, majority@k, the verifier's metrics) are
    ``palaestra.evaluate.run_figures`` of the run's files, each with its 95% interval, n and
    failures; ``failures_as_zero`` reads failed rollouts as reward 0 instead of leaving them
    out. Reading the files back costs about 4-5 s per 100,000 rollouts of 4.75 kB (see
    ``figures_rows``). A run without files (or with a line that cannot be read) shows the
    counts the collector kept, and says why.
    """
    table = Table(title="palaestra collect", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    finished = summary.done + summary.failed
    table.add_row("rollouts scored", f"{summary.scored} in the output file")
    rows, note = figures_rows(summary, failures_as_zero)
    for name, text in rows:
        table.add_row(escape(name), escape(text))
    if note:
        table.add_row("", escape(note))
    truncated: Counter[str] = Counter()
    for entry in summary.aggregate:
        for name, count in entry.get("key_metrics", {}).items():
            if name.startswith("truncated/"):
                truncated[name.removeprefix("truncated/")] += int(count)
    if truncated:
        table.add_row(
            "truncated",
            f"{_scored_rollouts(truncated.total())} (_palaestra.truncated): "
            + _truncations(truncated),
        )
    if summary.skipped:
        table.add_row("already done (resumed)", str(summary.skipped))
    if summary.continued:
        table.add_row(
            "continued mid-episode", f"{summary.continued} (from their last completed turn)"
        )
    if summary.fenced:
        table.add_row("stale attempts refused", str(summary.fenced))
    this_run = f"{summary.done} scored, {summary.failed} failed"
    if summary.truncated:
        this_run += f", {summary.truncated} truncated ({_truncations(summary.truncated_by)})"
    table.add_row("this run", this_run)
    table.add_row("failures", _failures_text(summary, failures_as_zero))
    reasons = summary.reasons.most_common(SHOWN_REASONS)
    if reasons:
        lines = [f"{count:>6}  {escape(reason)}" for reason, count in reasons]
        if len(summary.reasons) > SHOWN_REASONS:
            lines.append(f"... {len(summary.reasons) - SHOWN_REASONS} more reasons")
        table.add_row("why", "\n".join(lines))
    table.add_row("throughput", f"{finished / max(elapsed, 1e-9):.2f} rollouts/s ({elapsed:.1f} s)")
    if summary.paused_calls:
        table.add_row(
            "model pauses",
            f"{summary.paused_calls} requests met a weight-update pause, "
            f"{summary.paused_seconds:.1f} s waited (no retries spent)",
        )
    endpoints: list[JsonDict] = getattr(summary, "endpoints", None) or []
    if len(endpoints) > 1:
        table.add_row("model endpoints", endpoints_table(endpoints))
    if summary.files is not None:
        table.add_row("output", str(summary.files.output))
        table.add_row("failures file", str(summary.files.failures))
        table.add_row("metrics", str(summary.files.aggregate_metrics))
        # What a newcomer does next: read the trajectories behind the figures.
        command = f"palaestra view {shlex.quote(str(summary.files.output))}"
        table.add_row("read the rollouts", escape(command))
    if summary.stopped_reason:
        table.add_row("[red]stopped[/]", escape(summary.stopped_reason))
    return table


def figures_rows(summary: RunSummary, failures_as_zero: bool) -> tuple[list[tuple[str, str]], str]:
    """The figure lines of the summary (name, text) and a note on how they were made.

    A collector's summary carries its per-task counts (``summary.metrics``): the figures come
    from them (``palaestra.evaluate.summary``: mean reward, pass@k, pass^k, analytic intervals,
    pure Python), with no re-read of the output. Reading the files back instead (a summary
    without them) cost 0.35 s to load numpy and scipy and 1.2 kB per rollout: a 100,000-task
    run peaked at 171 MB against 61 MB for 1,000 tasks.
    """
    from palaestra.errors import ConfigError, InputError

    # Two short lines (an 80-column terminal's cell): what the bracket is, how failures read;
    # the methods in full, the bootstrap and every other figure are the report's.
    reading = "failures read as 0" if failures_as_zero else "failures left out"
    reading += "; all figures: palaestra report"
    if summary.metrics is not None:
        from palaestra.evaluate.summary import running_figures

        metrics = summary.metrics
        figures = running_figures(
            metrics.task_counts,
            metrics.failed_by_task,
            failed=sum(metrics.failure_kinds.values()),
            masked=metrics.masked,
            failures_as_zero=failures_as_zero,
        )
        rows = [(figure.name, figure.describe()) for figure in figures]
        return rows, f"[95% interval] over tasks: Wilson (0/1) or Student's t\n{reading}"
    files = summary.files
    if files is None or not files.output.is_file():
        mean = summary.mean_reward
        text = "-" if mean is None else f"{mean:.4f} over the file's scored rollouts"
        return [("mean reward", text)], ""
    from palaestra.evaluate import load_run, run_figures

    try:
        run = load_run(files.output, failures=files.failures, details=False)
        read_back = run_figures(run, failures_as_zero=failures_as_zero)
    except (ConfigError, InputError) as error:
        mean = summary.mean_reward
        text = "-" if mean is None else f"{mean:.4f} over the file's scored rollouts"
        return [("mean reward", text)], f"no intervals: {error}"
    rows = [(figure.name, figure.describe()) for figure in read_back.figures]
    return rows, f"[95% interval] over tasks: Wilson (0/1) or bootstrap\n{reading}"


ENDPOINT_COLUMNS = (
    "url",
    "healthy",
    "calls",
    "failures",
    "retries",
    "rollouts",
    "latency_p50",
    "latency_p99",
)
"""The columns of the endpoints table, of those the endpoints report (else all of theirs)."""


def endpoints_table(endpoints: list[JsonDict]) -> Table:
    """A model pool's endpoints, one row each (``RunSummary.endpoints``)."""
    from palaestra.evaluate.markdown import endpoint_cell

    keys = [key for key in ENDPOINT_COLUMNS if any(key in e for e in endpoints)]
    if len(keys) < 2:
        keys = list(dict.fromkeys(key for endpoint in endpoints for key in endpoint))
    table = Table(box=None, pad_edge=False)
    for key in keys:
        table.add_column(key.replace("_", " "), justify="left" if key == "url" else "right")
    for endpoint in endpoints:
        # The url as messages name it; the summary file keeps the one rows name.
        shown = (
            {**endpoint, "url": shown_url(str(endpoint["url"]))} if "url" in endpoint else endpoint
        )
        table.add_row(*(escape(endpoint_cell(shown.get(key))) for key in keys))
    return table


def _failures_text(summary: RunSummary, failures_as_zero: bool = False) -> str:
    total = summary.failed
    if not total:
        return "0"
    kinds = ", ".join(f"{kind} {count}" for kind, count in summary.failures.most_common())
    reading = (
        "counted as reward 0"
        if failures_as_zero
        else "not counted as reward 0 (--failures-as-zero: as 0)"
    )
    return f"{total} ({kinds}) — {reading}"


_TRUNCATIONS = {
    "max_steps": "hit --max-steps",
    "max_user_turns": "hit --max-user-turns",
    "context_exceeded": "outgrew the model's context (give it a larger one)",
}
"""What each ``_palaestra.truncated`` cause means, in the summary's words."""


def _truncations(counts: Counter[str]) -> str:
    """``2 hit --max-steps, 1 outgrew the model's context ...``: truncations by cause."""
    return ", ".join(f"{count} {_TRUNCATIONS.get(why, why)}" for why, count in counts.most_common())


def _scored_rollouts(count: int) -> str:
    return f"{count} scored rollout" + ("" if count == 1 else "s")

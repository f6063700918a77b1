"""``palaestra report RUN``: a run's report as markdown and as a self-contained HTML page.

A thin shell over ``palaestra.evaluate.write_report``: the flags become its arguments; what is
left here is what the terminal shows (where the files went, the headline figures).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from palaestra.cli.errors import exit_on_user_error


@click.command("report")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--markdown",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Where the markdown goes. Default: <run>_report.md beside the run (one RUN).",
)
@click.option(
    "--html",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Where the HTML page goes. Default: <run>_report.html beside the run (one RUN).",
)
@click.option(
    "--failures-as-zero",
    is_flag=True,
    help="Read failed rollouts as reward 0 (default: leave them out of the figures).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the resampling.")
@click.option("--title", help="The report's title. Default: the run's path.")
def report_command(
    runs: tuple[Path, ...],
    markdown: Path | None,
    html: Path | None,
    failures_as_zero: bool,
    seed: int,
    title: str | None,
) -> None:
    """Write the report of RUN: figures with intervals, distributions, failures, timing.

    RUN is a rollouts JSONL file (its _failures.jsonl and _aggregate_metrics.json beside it
    are read too); the report goes beside it as RUN_report.md and RUN_report.html (one page,
    inline CSS and SVG, no network). Several RUNs make one report with each run's figures and
    the overall figures of their tasks pooled; they need --markdown and --html. A run still
    being written (or killed mid-write) is read as far as it goes: a torn last line is skipped
    with a warning. A RUN may also be ATIF trajectories (a .json file of one, or a directory of
    them): the report goes beside it the same way.

    Exit status: 0 done; 1 a user error (a missing or malformed run, an unwritable path).
    """
    from palaestra.collection.files import RunFiles
    from palaestra.errors import ConfigError
    from palaestra.evaluate.report import write_report
    from palaestra.run.atif import readable_runs

    console = Console(stderr=True)
    with exit_on_user_error(console):
        if len(runs) > 1 and (markdown is None or html is None):
            raise ConfigError("several runs make one report: give --markdown and --html")
        if len(runs) == 1:  # beside the run as given, not beside its decoded copy
            beside = RunFiles(runs[0])
            markdown = beside.report_markdown if markdown is None else markdown
            html = beside.report_html if html is None else html
        with readable_runs(runs) as readable:
            for path in readable:
                if (
                    path.is_file()
                    and not _holds_a_row(path)
                    and not _holds_a_row(failures_of(path))
                ):
                    raise ConfigError(
                        f"{path} holds no rollouts, nor does its failures file: nothing to report"
                    )
            written = write_report(
                _named(runs, readable),
                markdown=markdown,
                html=html,
                failures_as_zero=failures_as_zero,
                seed=seed,
                title=title,
            )
    for run in written.report.runs:
        for warning in run.figures.run.warnings:
            console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False, soft_wrap=True)
    show_written(written.markdown, written.html, Console(), headline=written.report.headline())


def _named(given: Sequence[Path], readable: list[Path]) -> list[Path] | dict[str, Path]:
    """The runs to report: as given, or named as given when an ATIF one was decoded."""
    if list(given) == readable:
        return readable
    named: dict[str, Path] = {}
    for path, run in zip(given, readable, strict=True):
        name, copy = str(path), 1
        while name in named:
            copy += 1
            name = f"{path} ({copy})"
        named[name] = run
    return named


def failures_of(run: Path) -> Path:
    """The run's failures file (``RunFiles.failures``)."""
    from palaestra.collection.files import RunFiles

    return RunFiles(run).failures


def _holds_a_row(path: Path) -> bool:
    """Whether ``path`` is a file with a line that is not blank (read up to the first)."""
    if not path.is_file():
        return False
    with path.open("rb") as file:
        return any(line.strip() for line in file)


def show_written(
    markdown: Path, html: Path, console: Console, *, headline: Sequence[str] | None = None
) -> None:
    """Where the report went, and its headline: ``headline``, or the markdown's first
    paragraph (the counts and how the figures read failures)."""
    if not markdown.is_file():
        console.print("report: none (the run wrote no rollouts file)", highlight=False)
        return
    if headline is None:
        paragraphs = markdown.read_text(encoding="utf-8").split("\n\n")
        headline = paragraphs[1:2]
    for line in headline:
        console.print(escape(line), highlight=False, soft_wrap=True)
    console.print(f"report: {escape(str(markdown))}", highlight=False, soft_wrap=True)
    console.print(f"        {escape(str(html))}", highlight=False, soft_wrap=True)

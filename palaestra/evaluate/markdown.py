"""A ``Report`` as markdown: tables a terminal, a pull request or a notebook shows as they are."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from palaestra.evaluate.figures import Figure, RunFigures
from palaestra.evaluate.report import (
    OVERALL,
    Bar,
    Report,
    RunReport,
    Spread,
    TaskLine,
    headline_names,
)
from palaestra.types import JsonDict

TASKS_SHOWN = 20
"""The hardest tasks listed (the HTML page lists more)."""
BAR_WIDTH = 30
TEXT_COLUMNS = frozenset({"", "prompt digest", "most frequent reasons", "note", "url"})
ENDPOINT_KEYS = ("url", "healthy", "calls", "failures", "retries", "latency_p50", "latency_p99")


def to_markdown(report: Report) -> str:
    """The whole report as one markdown document."""
    lines = [f"# {_text(report.title)}", ""]
    lines += [intro(report), ""]
    for note in report.notes:
        lines += [f"> {_text(note)}", ""]
    several = len(report.runs) > 1
    if several:
        lines += ["## Overview", ""]
        lines += overview(report)
        lines += ["", overall_definition(report), ""]
    for run in report.runs:
        lines += run_section(run, level=3 if several else 2)
    return "\n".join(lines).rstrip() + "\n"


def intro(report: Report) -> str:
    """What the figures are: means over tasks, 95% intervals, the reading of failures."""
    runs = report.runs
    tasks = sum(run.figures.tasks for run in runs)
    scored = sum(run.figures.scored for run in runs)
    failed = sum(run.figures.failed for run in runs)
    masked = sum(run.figures.masked for run in runs)
    return (
        f"{tasks} tasks, {scored + failed} rollouts: {scored} scored, {failed} failed "
        f"({masked} masked). Each figure is a mean over tasks with its 95% confidence interval "
        "(Wilson's when each task has one pass/fail value, else the bootstrap over tasks, a "
        f"task's rollouts resampled together); {report.reading}."
    )


def overall_definition(report: Report) -> str:
    """How the overall figures of several runs are made (stated in every such report)."""
    return (
        f"**{OVERALL}** pools the tasks of every environment: each task weighs the same, "
        "whichever environment it comes from (an environment with more tasks weighs more), and "
        "its interval resamples tasks across all of them. Verifier metrics are per environment."
    )


def overview(report: Report) -> list[str]:
    """One row per run and the overall row: the reward figures with their intervals."""
    names = _union(headline_names(run.figures) for run in report.runs)
    header = ["environment", "tasks", "rollouts", "failed", *names]
    rows = [_overview_row(run.name, run.figures, names) for run in report.runs]
    if report.overall is not None:
        rows.append(_overview_row(f"**{OVERALL}**", report.overall, names))
    return table(header, rows)


def run_section(run: RunReport, *, level: int) -> list[str]:
    """Everything about one run, under headings of ``level``."""
    heading = "#" * level
    lines: list[str] = []
    if level > 2:
        lines += [f"{'#' * (level - 1)} {_text(run.name)}", ""]
    lines += [f"Rollouts: `{_text(str(run.output))}`", ""]
    for note in run.notes:
        lines += [f"> {_text(note)}", ""]
    lines += [f"{heading} Figures", "", *figures_table(run.figures), ""]
    lines += [f"{heading} Reward distribution", ""]
    lines += [*bars_table("reward", run.rewards, "scored rollouts"), ""]
    lines += [f"{heading} Pass rate per task", ""]
    lines += [*bars_table("pass rate", run.pass_rates, "tasks"), ""]
    if run.tasks:
        shown = run.tasks[:TASKS_SHOWN]
        more = len(run.tasks) - len(shown)
        lines += [f"The hardest {len(shown)} tasks" + (f" ({more} more):" if more else ":"), ""]
        lines += [*tasks_table(shown), ""]
    lines += [f"{heading} Failures", ""]
    if run.failures:
        rows = [
            [
                f"`{_text(group.kind)}`",
                str(group.count),
                str(group.masked),
                "<br>".join(f"{count} x {_text(reason)}" for reason, count in group.reasons),
            ]
            for group in run.failures
        ]
        lines += [*table(["kind", "rollouts", "masked", "most frequent reasons"], rows), ""]
    else:
        lines += ["No rollout failed.", ""]
    if run.truncated:
        lines += [truncated_line(run.truncated), ""]
    lines += [f"{heading} Time per phase (seconds per rollout)", ""]
    lines += [*spreads_table("phase", run.timings, "{:.3f}"), ""]
    lines += [f"{heading} Token usage (per rollout)", ""]
    lines += [*spreads_table("tokens", run.usage, "{:.0f}"), ""]
    if run.endpoints:
        lines += [f"{heading} Model endpoints", "", *endpoints_table(run.endpoints), ""]
    return lines


def figures_table(figures: RunFigures) -> list[str]:
    rows = [
        [
            _text(figure.name),
            _value(figure.value),
            _interval(figure),
            figure.interval.method if figure.interval is not None else "-",
            str(figure.tasks),
            str(figure.rollouts),
            f"{figure.failed} ({_reading(figure)})" if figure.failed else "0",
        ]
        + ([_text(figure.note)] if any(f.note for f in figures.figures) else [])
        for figure in figures.figures
    ]
    header = ["figure", "value", "95% interval", "method", "tasks (n)", "rollouts", "failed"]
    if any(figure.note for figure in figures.figures):
        header.append("note")
    return table(header, rows)


def bars_table(label: str, found: Sequence[Bar], unit: str) -> list[str]:
    if not found:
        return [f"No {unit}."]
    total = sum(bar.count for bar in found)
    most = max(bar.count for bar in found)
    rows = [
        [
            bar.label,
            str(bar.count),
            f"{bar.count / total:.1%}",
            "█" * round(BAR_WIDTH * bar.count / most) if most else "",
        ]
        for bar in found
    ]
    return table([label, unit, "share", ""], rows)


def tasks_table(tasks: Sequence[TaskLine]) -> list[str]:
    rows = [
        [
            str(task.index),
            f"`{task.identity}`" if task.identity else "-",
            str(task.scored),
            str(task.failed),
            str(task.passed),
            _value(task.pass_rate, 3),
            _value(task.mean_reward, 3),
        ]
        for task in tasks
    ]
    header = ["task", "prompt digest", "scored", "failed", "passed", "pass rate", "mean reward"]
    return table(header, rows)


def spreads_table(label: str, spreads: Sequence[Spread], number: str) -> list[str]:
    if not spreads:
        return ["Not recorded in the rows."]
    rows = [
        [
            _text(found.name),
            str(found.rollouts),
            number.format(found.mean),
            number.format(found.median),
            number.format(found.p90),
            number.format(found.maximum),
            number.format(found.total),
        ]
        for found in spreads
    ]
    return table([label, "rollouts", "mean", "median", "p90", "max", "total"], rows)


def endpoints_table(endpoints: Sequence[JsonDict]) -> list[str]:
    keys = [key for key in ENDPOINT_KEYS if any(key in endpoint for endpoint in endpoints)]
    keys += sorted({key for endpoint in endpoints for key in endpoint} - set(keys))
    rows = [[_text(endpoint_cell(endpoint.get(key))) for key in keys] for endpoint in endpoints]
    return table(keys, rows)


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A markdown table: the first column and the text columns left-aligned, numbers right."""
    align = [":--" if i == 0 or name in TEXT_COLUMNS else "--:" for i, name in enumerate(header)]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _overview_row(name: str, figures: RunFigures, names: Sequence[str]) -> list[str]:
    cells = [_text(name), str(figures.tasks), str(figures.scored + figures.failed)]
    cells.append(str(figures.failed))
    known = {figure.name: figure for figure in figures.figures}
    for figure_name in names:
        figure = known.get(figure_name)
        if figure is None or figure.value is None:
            cells.append("-")
        else:
            cells.append(f"{figure.value:.3f} {_interval(figure, 3)}")
    return cells


def _union(groups: Iterable[Iterable[str]]) -> list[str]:
    names: dict[str, None] = {}
    for group in groups:
        names.update(dict.fromkeys(group))
    return list(names)


def _interval(figure: Figure, digits: int = 4) -> str:
    found = figure.interval
    if found is None:
        return "-"
    return f"[{found.low:.{digits}f}, {found.high:.{digits}f}]"


def _reading(figure: Figure) -> str:
    return "as 0" if figure.reading == "failures as 0" else "excluded"


def _value(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def endpoint_cell(value: object) -> str:
    """One figure of an endpoints table (this page's, and the terminal's summary)."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def _text(text: str) -> str:
    """A table cell's text: one line, pipes escaped, no HTML."""
    flat = " ".join(text.split())
    return flat.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def truncated_line(count: int) -> str:
    """What the scored rollouts that were cut short are, in one sentence (any cause: the
    agent's step budget, the simulated user's turns, the model's context)."""
    rollouts, were = ("rollout", "was") if count == 1 else ("rollouts", "were")
    return (
        f"{count} scored {rollouts} {were} cut short (truncated: --max-steps, the user's turns "
        f"or the model's context) and scored as {'it' if count == 1 else 'they'} stood."
    )

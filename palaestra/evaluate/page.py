"""A ``Report`` as one self-contained HTML page: inline CSS and SVG, no script, nothing fetched.

The page opens from disk, offline, in any browser, and can be attached to a pull request or
mailed as it is. It shows what the markdown shows, with charts (``palaestra.evaluate.charts``)
and more of the hardest tasks (``TASKS_SHOWN``) in a table that folds away.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from palaestra.evaluate.charts import bar_chart, interval_chart
from palaestra.evaluate.figures import Figure, RunFigures
from palaestra.evaluate.markdown import (
    ENDPOINT_KEYS,
    TEXT_COLUMNS,
    intro,
    overall_definition,
    truncated_line,
)
from palaestra.evaluate.report import OVERALL, Report, RunReport, Spread, headline_names

TASKS_SHOWN = 500

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 72em; padding: 0 1em;
       color: #1d232a; background: #fff; }
h1 { font-size: 1.5em; } h2 { margin-top: 2em; border-bottom: 1px solid #d0d7de; }
h3 { margin-top: 1.6em; } code { font-size: 0.92em; background: #f3f5f7; padding: 0 .25em; }
table { border-collapse: collapse; margin: .6em 0; }
th, td { padding: .25em .7em; border-bottom: 1px solid #e4e8eb; text-align: right;
         vertical-align: top; }
th { background: #f3f5f7; } th:first-child, td:first-child, th.text { text-align: left; }
td { white-space: nowrap; }
td.reasons { text-align: left; max-width: 48em; word-break: break-word; white-space: normal; }
.note { color: #57606a; } .overall td { font-weight: 600; }
svg { max-width: 100%; height: auto; display: block; margin: .5em 0; }
svg .bar { fill: #4c78a8; } svg .dot { fill: #d1495b; }
svg .whisker { stroke: #d1495b; stroke-width: 3; } svg .axis { stroke: #57606a; }
svg .grid { stroke: #e4e8eb; } svg text { font: 11px system-ui, sans-serif; fill: #1d232a; }
svg .count, svg .label, svg .small { text-anchor: middle; } svg .small { font-size: 8px; }
svg .name { text-anchor: end; }
"""


def to_html(report: Report) -> str:
    """The whole report as one HTML document."""
    parts = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(report.title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{escape(report.title)}</h1>",
        f"<p>{escape(intro(report))}</p>",
    ]
    parts += [f'<p class="note">{escape(note)}</p>' for note in report.notes]
    if len(report.runs) > 1:
        parts.append("<h2>Overview</h2>")
        parts.append(_overview(report))
        parts.append(f"<p>{_strong(overall_definition(report))}</p>")
    for run in report.runs:
        parts.append(_run(run, several=len(report.runs) > 1))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _overview(report: Report) -> str:
    names = list(dict.fromkeys(n for run in report.runs for n in headline_names(run.figures)))
    rows: list[tuple[str, RunFigures]] = [(run.name, run.figures) for run in report.runs]
    if report.overall is not None:
        rows.append((OVERALL, report.overall))
    header = ["environment", "tasks", "rollouts", "failed", *names]
    body = []
    for name, figures in rows:
        known = {figure.name: figure for figure in figures.figures}
        cells = [escape(name), str(figures.tasks), str(figures.scored + figures.failed)]
        cells.append(str(figures.failed))
        cells += [_with_interval(known.get(figure_name)) for figure_name in names]
        marked = ' class="overall"' if name == OVERALL and figures is report.overall else ""
        body.append(f"<tr{marked}>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    chart = interval_chart(
        [
            (name, figure.value, *_bounds(figure))
            for name, figures in rows
            if (figure := _find(figures, "mean reward")) is not None and figure.value is not None
        ],
        title="mean reward with its 95% interval, per environment and overall",
    )
    return _table(header, body) + chart


def _run(run: RunReport, *, several: bool) -> str:
    level, sub = ("h2", "h3") if several else ("h2", "h2")
    parts = []
    if several:
        parts.append(f"<{level}>{escape(run.name)}</{level}>")
    parts.append(f"<p>Rollouts: <code>{escape(str(run.output))}</code></p>")
    parts += [f'<p class="note">{escape(note)}</p>' for note in run.notes]
    parts.append(f"<{sub}>Figures</{sub}>")
    parts.append(_figures(run.figures))
    parts.append(f"<{sub}>Reward distribution</{sub}>")
    parts.append(
        bar_chart(run.rewards, title="rewards of the scored rollouts", unit="reward")
        or "<p>No scored rollouts.</p>"
    )
    parts.append(f"<{sub}>Pass rate per task</{sub}>")
    parts.append(
        bar_chart(run.pass_rates, title="tasks by pass rate", unit="pass rate of a task")
        or "<p>No tasks with a pass rate.</p>"
    )
    if run.tasks:
        shown = run.tasks[:TASKS_SHOWN]
        more = len(run.tasks) - len(shown)
        summary = f"The hardest {len(shown)} tasks" + (f" ({more} more)" if more else "")
        rows = [
            _row(
                str(task.index),
                f"<code>{escape(task.identity)}</code>" if task.identity else "-",
                str(task.scored),
                str(task.failed),
                str(task.passed),
                _number(task.pass_rate, 3),
                _number(task.mean_reward, 3),
            )
            for task in shown
        ]
        header = ["task", "prompt digest", "scored", "failed", "passed", "pass rate", "mean reward"]
        parts.append(f"<details><summary>{summary}</summary>{_table(header, rows)}</details>")
    parts.append(f"<{sub}>Failures</{sub}>")
    if run.failures:
        rows = [
            f"<tr><td><code>{escape(group.kind)}</code></td><td>{group.count}</td>"
            f'<td>{group.masked}</td><td class="reasons">'
            + "<br>".join(f"{count} &times; {escape(reason)}" for reason, count in group.reasons)
            + "</td></tr>"
            for group in run.failures
        ]
        parts.append(_table(["kind", "rollouts", "masked", "most frequent reasons"], rows))
    else:
        parts.append("<p>No rollout failed.</p>")
    if run.truncated:
        parts.append(f"<p>{escape(truncated_line(run.truncated))}</p>")
    parts.append(f"<{sub}>Time per phase (seconds per rollout)</{sub}>")
    parts.append(_spreads("phase", run.timings, "{:.3f}"))
    parts.append(f"<{sub}>Token usage (per rollout)</{sub}>")
    parts.append(_spreads("tokens", run.usage, "{:.0f}"))
    if run.endpoints:
        keys = [key for key in ENDPOINT_KEYS if any(key in e for e in run.endpoints)]
        keys += sorted({key for e in run.endpoints for key in e} - set(keys))
        rows = [_row(*(escape(_cell(e.get(key))) for key in keys)) for e in run.endpoints]
        parts.append(f"<{sub}>Model endpoints</{sub}>" + _table(keys, rows))
    return "\n".join(parts)


def _figures(figures: RunFigures) -> str:
    header = [
        "figure",
        "value",
        "95% interval",
        "method",
        "tasks (n)",
        "rollouts",
        "failed",
        "note",
    ]
    rows = []
    for figure in figures.figures:
        failed = str(figure.failed)
        if figure.failed:
            failed += " (as 0)" if figure.reading == "failures as 0" else " (excluded)"
        method = figure.interval.method if figure.interval is not None else "-"
        rows.append(
            _row(
                escape(figure.name),
                _number(figure.value, 4),
                _interval(figure),
                method,
                str(figure.tasks),
                str(figure.rollouts),
                failed,
                escape(figure.note),
            )
        )
    shown = [
        (figure.name, figure.value, *_bounds(figure))
        for figure in figures.figures
        if figure.name in headline_names(figures) and figure.value is not None
    ]
    chart = interval_chart(shown, title="figures with their 95% intervals")
    return _table(header, rows) + chart


def _spreads(label: str, spreads: Sequence[Spread], number: str) -> str:
    if not spreads:
        return "<p>Not recorded in the rows.</p>"
    rows = [
        _row(
            escape(found.name),
            str(found.rollouts),
            *(number.format(v) for v in (found.mean, found.median, found.p90, found.maximum)),
            number.format(found.total),
        )
        for found in spreads
    ]
    return _table([label, "rollouts", "mean", "median", "p90", "max", "total"], rows)


def _table(header: Sequence[str], rows: Sequence[str]) -> str:
    head = "".join(
        f'<th class="text">{escape(name)}</th>'
        if name in TEXT_COLUMNS
        else f"<th>{escape(name)}</th>"
        for name in header
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _row(*cells: str) -> str:
    return "<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


def _find(figures: RunFigures, name: str) -> Figure | None:
    return next((figure for figure in figures.figures if figure.name == name), None)


def _bounds(figure: Figure) -> tuple[float | None, float | None]:
    found = figure.interval
    return (None, None) if found is None else (found.low, found.high)


def _with_interval(figure: Figure | None) -> str:
    if figure is None or figure.value is None:
        return "-"
    return f"{figure.value:.3f} {_interval(figure, 3)}"


def _interval(figure: Figure, digits: int = 4) -> str:
    found = figure.interval
    return "-" if found is None else f"[{found.low:.{digits}f}, {found.high:.{digits}f}]"


def _number(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _cell(value: object) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _strong(text: str) -> str:
    """The markdown definition's ``**overall**`` as HTML."""
    return escape(text).replace(f"**{OVERALL}**", f"<strong>{OVERALL}</strong>")

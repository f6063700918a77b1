"""Charts as inline SVG strings, drawn here: a report's page needs no script and no network.

``bar_chart`` draws a distribution (``report.Bar`` s), ``interval_chart`` figures with their
confidence intervals (a dot and a whisker each, on one shared scale). Every text is escaped;
sizes are in SVG user units and the ``viewBox`` lets the page scale them.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from palaestra.evaluate.report import Bar

WIDTH = 640
BAR_HEIGHT = 140
ROW = 26
LABEL = 190
"""Room for the labels left of an interval chart's rows."""


def bar_chart(bars: Sequence[Bar], *, title: str, unit: str) -> str:
    """Vertical bars, one per ``Bar``, its count above it and its label below."""
    if not bars:
        return ""
    most = max(bar.count for bar in bars) or 1
    slot = (WIDTH - 20) / len(bars)
    width = min(80.0, max(2.0, slot * 0.8))
    base = 22 + BAR_HEIGHT  # 22 above the tallest bar for its count
    parts = [_open(WIDTH, base + 40, title)]
    for number, bar in enumerate(bars):
        x = 10 + slot * number + (slot - width) / 2
        height = BAR_HEIGHT * bar.count / most
        middle = x + width / 2
        parts.append(
            f'<rect class="bar" x="{x:.1f}" y="{base - height:.1f}" width="{width:.1f}" '
            f'height="{height:.1f}"><title>{escape(bar.label)}: {bar.count} {escape(unit)}'
            "</title></rect>"
        )
        parts.append(
            f'<text x="{middle:.1f}" y="{base - height - 4:.1f}" class="count">{bar.count}</text>'
        )
        size = "small" if len(bar.label) * 6 > slot else "label"
        parts.append(
            f'<text x="{middle:.1f}" y="{base + 16}" class="{size}">{escape(bar.label)}</text>'
        )
    parts.append(f'<line x1="6" y1="{base}" x2="{WIDTH - 6}" y2="{base}" class="axis"/>')
    parts.append(
        f'<text x="{WIDTH / 2:.0f}" y="{base + 34}" class="label">{escape(unit)}</text></svg>'
    )
    return "".join(parts)


def interval_chart(
    rows: Sequence[tuple[str, float, float | None, float | None]], *, title: str
) -> str:
    """One row per ``(label, value, low, high)``: the value as a dot, the interval as a line.

    The scale runs over the values and bounds, widened to hold 0 and 1 (rewards and pass
    rates), with its ends and 0.5 marked.
    """
    if not rows:
        return ""
    found = [v for _, value, low, high in rows for v in (value, low, high) if v is not None]
    start, stop = min([0.0, *found]), max([1.0, *found])
    span = (stop - start) or 1.0
    left, right = LABEL, WIDTH - 20

    def x(value: float) -> float:
        return left + (right - left) * (value - start) / span

    height = 30 + ROW * len(rows)
    parts = [_open(WIDTH, height, title)]
    for tick in sorted({start, stop, *([0.5] if start < 0.5 < stop else [])}):
        parts.append(
            f'<line x1="{x(tick):.1f}" y1="8" x2="{x(tick):.1f}" y2="{height - 18}" '
            f'class="grid"/><text x="{x(tick):.1f}" y="{height - 4}" class="label">'
            f"{tick:.3g}</text>"
        )
    for number, (label, value, low, high) in enumerate(rows):
        y = 20 + ROW * number
        shown = f"{value:.3f}" + ("" if low is None else f" [{low:.3f}, {high:.3f}]")
        parts.append(
            f'<text x="{left - 8}" y="{y + 4}" class="name">{escape(label)}</text>'
            f"<g><title>{escape(label)}: {shown}</title>"
        )
        if low is not None and high is not None:
            parts.append(
                f'<line x1="{x(low):.1f}" y1="{y}" x2="{x(high):.1f}" y2="{y}" class="whisker"/>'
            )
        parts.append(f'<circle cx="{x(value):.1f}" cy="{y}" r="4" class="dot"/></g>')
    parts.append("</svg>")
    return "".join(parts)


def _open(width: int, height: float, title: str) -> str:
    return (
        f'<svg viewBox="0 0 {width} {height:.0f}" '
        f'role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>'
    )

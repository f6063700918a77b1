"""The workers' counters added up: a model pool's per-endpoint counts, and (``added_up``) the
model and environment counters the collector's ``/metrics`` serves.

With workers, each worker has its own pool over the same endpoints (``palaestra.models.pool``)
and sends its cumulative counts with each result; the dispatcher keeps the last counts of each
worker (a dead worker's included, minus the calls of the rollouts it lost) and adds them up
per URL for the run's summary and aggregate file, as one process's pool would report them:
counts are summed, ``healthy`` holds when every worker finds the endpoint healthy,
``latency_mean`` is weighted by ``latency_count``, and the latency percentiles are the largest
of the workers' own (an upper bound: percentiles cannot be added up).

Each worker sends its counters since it started (``metrics_counts.runner_counts``), so a
replacement starts from zero and the dead worker's last counts stay in the sum: a counter never
goes down. A dead worker's gauges (live sessions, stuck threads, endpoint health) are dropped
(``settled``): they went with it.
"""

from __future__ import annotations

from collections.abc import Iterable

from palaestra.types import JsonDict


def merged(reports: Iterable[list[JsonDict]]) -> list[JsonDict]:
    """One entry per URL (in the order first seen) over every worker's ``reports``."""
    by_url: dict[str, list[JsonDict]] = {}
    for report in reports:
        for entry in report:
            by_url.setdefault(str(entry.get("url")), []).append(entry)
    return [_merge(entries) for entries in by_url.values()]


def _merge(entries: list[JsonDict]) -> JsonDict:
    total: JsonDict = {}
    for key in entries[0]:
        values = [entry.get(key) for entry in entries]
        present = [value for value in values if value is not None]
        if key == "latency_mean" or not present:
            continue
        if key.startswith("latency_p"):
            total[key] = max(present)
        elif all(isinstance(value, bool) for value in present):
            total[key] = all(present)
        elif all(isinstance(value, int | float) for value in present):
            total[key] = sum(present)
        else:
            total[key] = present[0]
    if "latency_mean" in entries[0]:
        weighted = [
            (entry["latency_mean"], entry.get("latency_count") or 0)
            for entry in entries
            if entry.get("latency_mean") is not None
        ]
        count = sum(weight for _, weight in weighted)
        total["latency_mean"] = (
            round(sum(mean * weight for mean, weight in weighted) / count, 6) if count else None
        )
    for key in entries[0]:  # keep the pool's field order
        total.setdefault(key, None)
    ordered = {key: total[key] for key in entries[0]}
    ordered["workers"] = len(entries)
    return ordered


def added_up(reports: list[JsonDict]) -> JsonDict:
    """The workers' ``runner_counts`` as one process's: endpoints ``merged``, the tool calls
    and errors, sessions and stuck threads summed; a family no worker reported is absent."""
    total: JsonDict = {}
    endpoints = [report["endpoints"] for report in reports if "endpoints" in report]
    if endpoints:
        total["endpoints"] = merged(endpoints)
    counted = [report for report in reports if "tools" in report]
    if counted:
        tools: dict[str, int] = {}
        errors: dict[tuple[str, str], int] = {}
        for report in counted:
            for tool, count in report["tools"].items():
                tools[tool] = tools.get(tool, 0) + count
            for tool, kind, count in report["tool_errors"]:
                errors[tool, kind] = errors.get((tool, kind), 0) + count
        total["tools"] = tools
        total["tool_errors"] = [[tool, kind, count] for (tool, kind), count in errors.items()]
        for key in _SESSION_COUNTS:
            total[key] = sum(report.get(key, 0) for report in counted)
    return total


def settled(report: JsonDict) -> JsonDict:
    """A dead worker's last counts: its counters kept, its gauges zero (health unknown)."""
    kept = {**report, **{key: 0 for key in _GAUGES if key in report}}
    if "endpoints" in report:
        kept["endpoints"] = [{**entry, "healthy": None} for entry in report["endpoints"]]
    return kept


_SESSION_COUNTS = ("sessions_live", "sessions_expired", "stuck_threads")
_GAUGES = ("sessions_live", "stuck_threads")

"""The workers' counters added up: model pools per URL, tool calls and sessions."""

from __future__ import annotations

from palaestra.distributed.endpoints import added_up, merged, settled


def entry(url: str, calls: int, mean: float | None, p99: float | None, healthy: bool) -> dict:  # type: ignore[type-arg]
    count = calls if mean is not None else 0
    return {
        "url": url, "healthy": healthy, "calls": calls, "latency_count": count,
        "latency_mean": mean, "latency_p50": p99, "latency_p99": p99,
    }  # fmt: skip


def test_counts_add_up_per_url_and_the_mean_is_weighted_by_the_calls_it_came_from() -> None:
    one = [entry("a", 1, 1.0, 1.0, True), entry("b", 2, 0.5, 0.6, True)]
    two = [entry("a", 3, 3.0, 4.0, False)]
    a, b = merged([one, two])
    assert a == {
        "url": "a", "healthy": False, "calls": 4, "latency_count": 4,
        "latency_mean": 2.5, "latency_p50": 4.0, "latency_p99": 4.0, "workers": 2,
    }  # fmt: skip
    assert (b["calls"], b["latency_mean"], b["workers"]) == (2, 0.5, 1)


def test_an_endpoint_no_call_was_answered_by_has_no_latency() -> None:
    (a,) = merged([[entry("a", 2, None, None, True)], [entry("a", 1, None, None, True)]])
    assert (a["calls"], a["latency_mean"], a["latency_p99"]) == (3, None, None)


def counts(calls: int, tools: int, live: int) -> dict:  # type: ignore[type-arg]
    return {
        "endpoints": [{"url": "u", "calls": calls, "retries": 0, "failures": 0}],
        "pool": False, "tools": {"t": tools}, "tool_errors": [["t", "timeout", 1]],
        "sessions_live": live, "sessions_expired": 0, "stuck_threads": 1,
    }  # fmt: skip


def test_a_dead_worker_s_counters_stay_in_the_sum_and_its_gauges_leave_it() -> None:
    dead, alive = settled(counts(5, 3, live=2)), counts(1, 1, live=1)
    total = added_up([dead, alive])
    assert total["endpoints"][0]["calls"] == 6 and total["tools"] == {"t": 4}
    assert total["tool_errors"] == [["t", "timeout", 2]]
    assert (total["sessions_live"], total["stuck_threads"]) == (1, 1)  # the live worker's only
    assert added_up([]) == {}  # nothing reported yet: no family

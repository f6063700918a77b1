"""Per-endpoint counts of the workers' model pools, added up per URL."""

from __future__ import annotations

from palaestra.distributed.endpoints import merged


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

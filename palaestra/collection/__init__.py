"""Collecting rollouts: the collector, its files (output, failures, materialized inputs,
aggregate metrics, run identity, lock), task reading and progress.
"""

from typing import TYPE_CHECKING

from palaestra._util.lazy import lazy_exports

if TYPE_CHECKING:
    from palaestra.collection.collector import CollectConfig, Progress, RunSummary

# Loaded on first use: the CLI imports palaestra.collection.runtime (and its Terminated) at
# start-up, and importing the collector behind these names is a cost `palaestra --help` skips.
__getattr__ = lazy_exports(
    "palaestra.collection",
    dict.fromkeys(("CollectConfig", "Progress", "RunSummary"), "palaestra.collection.collector"),
)

__all__ = ["CollectConfig", "Progress", "RunSummary"]

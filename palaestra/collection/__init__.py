"""Collecting rollouts: the collector, its files (output, failures, materialized inputs,
aggregate metrics, run identity, lock), task reading and progress.
"""

from palaestra.collection.collector import CollectConfig, Progress, RunSummary

__all__ = ["CollectConfig", "Progress", "RunSummary"]

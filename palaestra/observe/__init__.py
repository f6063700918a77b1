"""Watching runs: Prometheus metrics (``metrics``, ``metrics_counts``, ``metrics_http``).

Nothing is imported here: ``prometheus_client`` loads only where metrics are served.
"""

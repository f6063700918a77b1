"""The author's kit: ``Environment``, ``@tool``, sessions, verdicts and the in-process runner.

An environment author opens this folder: ``base`` (the ``Environment`` class), ``tools``
(``@tool``), ``sessions``, ``step`` (reset/step environments), ``verdicts``, ``answers``
(reading a model's answer), ``boundary`` (where the author's code meets the rollout),
``client`` and ``threads`` (the in-process runner), ``registry`` (environments by name).
Beside them: ``rubric`` (a reward composed of parts, docs/rewards.md), ``judge`` (a model
as grader), ``users`` (simulated users), ``mcp`` (tools from an MCP server, docs/mcp.md) and
``catalogue`` (what ``palaestra envs`` lists of an environment, docs/catalogue.md).
"""

from palaestra.environment.base import Environment

__all__ = ["Environment"]

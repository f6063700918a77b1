"""A run as the viewer opens it: its rows indexed, its identity, and its summary.

``<out>_run.json`` (what the run was: environment, agent, model) is read when present; a
file of rows alone (NeMo Gym's, a hand-written one) is a run too.

The interval of the mean reward comes from ``palaestra.evaluate`` when that package is
installed with the function named in ``interval``; until then the summary carries
``interval: null`` and the page shows the mean alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from palaestra.observe.viewer.index import RunIndex
from palaestra.types import JsonDict


@dataclass
class Run:
    """One opened run."""

    path: Path
    index: RunIndex
    identity: JsonDict | None
    seconds_to_index: float

    @classmethod
    def open(cls, path: Path) -> Run:
        """Index ``path`` (one streaming pass over it and its failures file)."""
        started = time.perf_counter()
        index = RunIndex(path)
        elapsed = time.perf_counter() - started
        return cls(path, index, _identity(path), elapsed)

    def describe(self) -> JsonDict:
        summary = self.index.summary()
        summary["interval"] = interval(self.index.rewards_by_task())
        return {
            "path": str(self.path),
            "name": self.path.name,
            "failures_file": str(self.index.files[1]) if self.index.files[1] else None,
            "kinds": list(self.index.kinds),
            "summary": summary,
            "identity": self.identity,
            "seconds_to_index": round(self.seconds_to_index, 3),
        }


def _identity(path: Path) -> JsonDict | None:
    """The short form of ``<out>_run.json``: environment, agent, model, repeats."""
    file = path.with_name(path.name.removesuffix(".jsonl") + "_run.json")
    try:
        run: Any = orjson.loads(file.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(run, dict):
        return None
    env, agent, model = run.get("env") or {}, run.get("agent") or {}, run.get("model") or {}
    return {
        "env": env.get("name"),
        "env_args": env.get("args") or {},
        "agent": agent.get("name"),
        "model": model.get("model") or model.get("url") or model.get("backend"),
        "repeats": run.get("repeats"),
        "input": (run.get("input") or {}).get("path"),
    }


def interval(rewards_by_task: dict[int, list[float]]) -> JsonDict | None:
    """The mean reward's confidence interval from ``palaestra.evaluate``, when it is there.

    The hook for the evaluation issue's statistics: ``None`` (the page shows the mean alone)
    while ``palaestra.evaluate`` is not installed.
    """
    try:
        import palaestra.evaluate  # noqa: F401
    except ImportError:
        return None
    return None

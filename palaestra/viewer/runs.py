"""A run as the viewer opens it: its rows indexed, its identity, and its summary.

``<out>_run.json`` (what the run was: environment, agent, model) is read when present; a
file of rows alone (NeMo Gym's, a hand-written one) is a run too.

The headline figures with their confidence intervals (mean reward, pass@k, the verifier's
metrics) are ``palaestra.evaluate.run_figures``' own, computed on the first request for them
(a second pass over the run, in the background of the page) and kept until rows are added:
opening stays one pass.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from palaestra.types import JsonDict
from palaestra.viewer.index import RunIndex


@dataclass
class Run:
    """One opened run."""

    path: Path
    index: RunIndex
    identity: JsonDict | None
    seconds_to_index: float
    _figures: tuple[tuple[int, int], Any] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def open(cls, path: Path) -> Run:
        """Index ``path`` (one streaming pass over it and its failures file)."""
        started = time.perf_counter()
        index = RunIndex(path)
        elapsed = time.perf_counter() - started
        return cls(path, index, _identity(path), elapsed)

    def figures(self) -> Any:
        """``palaestra.evaluate.RunFigures`` of the run (computed once); ``InputError`` or
        ``ConfigError`` when ``palaestra.evaluate`` cannot read it (a row without a task
        index, say), which the page shows in place of the intervals."""
        with self._lock:
            version = self.version()
            if self._figures is None or self._figures[0] != version:
                from palaestra.evaluate import run_figures

                self._figures = (version, run_figures(self.path))
            return self._figures[1]

    def version(self) -> tuple[int, int]:
        """Changes whenever the rows do: (times indexed from the start, rows)."""
        return self.index.generation, len(self.index)

    def describe(self) -> JsonDict:
        summary = self.index.summary()
        return {
            "path": str(self.path),
            "name": self.path.name,
            "failures_file": str(self.index.files[1]) if self.index.files[1] else None,
            "kinds": list(self.index.kinds),
            "summary": summary,
            "identity": self.identity,
            "seconds_to_index": round(self.seconds_to_index, 3),
            "generation": self.index.generation,
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

"""Environments for the distributed tests, importable by name from worker processes and actors
(``tests.distributed.envs:Numbered``).

``Numbered`` rewards a rollout by its task's number (so rows can be compared run to run),
records which process ran it, and can be made slow (so rollouts are in flight when a worker is
killed) or deadly: a task with ``"crash": true`` kills the process its tool runs in; with
``unwritable`` every verdict carries a metric that is not JSON, so its row cannot be written.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Collection
from pathlib import Path

import orjson

from palaestra import Environment, Session, tool
from palaestra.types import JsonDict, Verdict


class Numbered(Environment):
    """One tool (``get_weather``, as the scripted weather model calls it); reward ``n / 10``."""

    name = "numbered"

    def __init__(
        self,
        delay: float = 0.0,
        pids: str | None = None,
        doom: str | None = None,
        unwritable: bool = False,
    ):
        if doom is not None and Path(doom).exists():  # a worker that can no longer start
            os._exit(3)
        self.delay, self.pids, self.doom = delay, pids, doom
        self.unwritable = unwritable

    @tool
    async def get_weather(self, city: str, session: Session) -> str:
        """Get the current weather in a city.

        Args:
            city: The name of the city.
        """
        if self.pids is not None:  # which process runs which rollout, for a killer to pick
            note = {"pid": os.getpid(), "n": session.task.get("n")}
            with open(Path(self.pids) / f"{os.getpid()}.jsonl", "ab") as notes:
                notes.write(orjson.dumps(note) + b"\n")
        if session.task.get("crash"):
            if self.doom is not None:
                Path(self.doom).touch()
            os._exit(7)
        await asyncio.sleep(self.delay)
        return f"cold in {city}"

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        metrics: JsonDict = {"pid": os.getpid()}
        if self.unwritable:  # not JSON: the worker sends the failure raised, not a result
            metrics["unwritable"] = {session.task["n"]}
        return Verdict(reward=session.task["n"] / 10, metrics=metrics)


def numbered_tasks(path: Path, count: int, *, crash: Collection[int] = ()) -> Path:
    rows = [
        {
            "responses_create_params": {"input": [{"role": "user", "content": "Weather?"}]},
            "n": n,
            **({"crash": True} if n in crash else {}),
        }
        for n in range(count)
    ]
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path

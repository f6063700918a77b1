"""A worker's side: the run's parts built from its ``RunSpec``, running one task at a time
for whoever sends it (a worker process's pipe, a Ray actor's method calls).

The parts are what ``palaestra.assembly.open_runner`` builds for a run in one process: the
environment in this process, the model as the spec says (over HTTP, or the embedded model
loaded here), the agent bound to both. Tasks run concurrently on the worker's event loop; the
collector decides how many are in flight here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from palaestra.distributed.codec import decode_task, encode_error, encode_raised, encode_result
from palaestra.types import JsonDict

ENDPOINT_STATS = "endpoint_stats"
"""Beside a result: the worker's model pool counts so far (``palaestra.models.pool``), sent
only when the model is a pool; a few µs per result for a handful of endpoints."""

if TYPE_CHECKING:
    from palaestra.agents.base import RolloutRunner
    from palaestra.spec import RunSpec


class WorkerRuntime:
    """The runner of one worker, opened by ``start`` and closed by ``close``."""

    def __init__(self, spec: RunSpec, threads: int) -> None:
        self.spec, self.threads = spec, threads
        self._stack = contextlib.AsyncExitStack()
        self._runner: RolloutRunner | None = None
        self._endpoint_stats: Callable[[], list[JsonDict]] | None = None

    async def start(self) -> JsonDict:
        """Open the parts and check the model; ``{"label", "facts"}`` of the run, or
        ``{"error": ...}`` saying why this worker cannot run (nothing is left open then)."""
        from palaestra.assembly import find, open_runner

        try:
            found = find(self.spec.env)
            parts = await self._stack.enter_async_context(
                open_runner(self.spec, found, threads=self.threads)
            )
            await parts.runner.check()
        except Exception as error:
            await self.close()
            return {"error": encode_error(error)}
        self._runner = parts.runner
        self._endpoint_stats = getattr(parts.runner, "endpoint_stats", None)
        return {"label": parts.label, "facts": parts.facts}

    async def run(self, payload: bytes) -> bytes:
        """One dispatched task (its orjson bytes) to its encoded result; never raises."""
        assert self._runner is not None, "start the worker first"
        try:
            result = await self._runner.run(decode_task(payload))
        except Exception as error:  # the collector records it as it would in process
            return encode_raised(error)
        stats = self._endpoint_stats() if self._endpoint_stats is not None else None
        return encode_result(result, {ENDPOINT_STATS: stats} if stats else None)

    async def close(self) -> None:
        self._runner = None
        await self._stack.aclose()

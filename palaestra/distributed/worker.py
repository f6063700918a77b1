"""A worker's side: the run's parts built from its ``RunSpec``, running one task at a time
for whoever sends it (a worker process's pipe, a Ray actor's method calls).

The parts are what ``palaestra.collection.assembly.open_runner`` builds for a run in one process:
the environment in this process, the model as the spec says (over HTTP, or the embedded model loaded
here), the agent bound to both. Tasks run concurrently on the worker's event loop; the collector
decides how many are in flight here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

import orjson

from palaestra.agents.context import NO_CONTEXT, RolloutContext
from palaestra.agents.durable import DURABLE_FIELD, Durability
from palaestra.distributed.codec import decode_task, encode_error, encode_raised, encode_result
from palaestra.observe.metrics_counts import runner_counts
from palaestra.types import JsonDict

COUNTS = "counts"
"""Beside each result: the worker's model and environment counters so far
(``metrics_counts.runner_counts``), for the run summary's model pool counts and the
collector's ``/metrics``. With every result, so the sums are exact when the run ends: encoding
them here and decoding them in the collector are a small part of the CPU a ``--workers 2``
rollout costs against an instant model (measured: benchmarks/results/micro.md)."""

if TYPE_CHECKING:
    from palaestra.agents.base import RolloutRunner
    from palaestra.spec import RunSpec


class WorkerRuntime:
    """The runner of one worker, opened by ``start`` and closed by ``close``."""

    def __init__(self, spec: RunSpec, threads: int) -> None:
        self.spec, self.threads = spec, threads
        self._stack = contextlib.AsyncExitStack()
        self._runner: RolloutRunner | None = None

    async def start(self) -> JsonDict:
        """Open the parts and check the model; ``{"label", "facts"}`` of the run, or
        ``{"error": ...}`` saying why this worker cannot run (nothing is left open then)."""
        from palaestra.collection.assembly import find, open_runner

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
        return {"label": parts.label, "facts": parts.facts}

    async def run(
        self, payload: bytes, send_checkpoint: Callable[[bytes], None] | None = None
    ) -> bytes:
        """One dispatched task (its orjson bytes) to its encoded result; never raises.

        A durable task (``DURABLE_FIELD``: the collector lent its rollout a ``Durability``)
        runs with its checkpoint to resume from, each new one encoded and given to
        ``send_checkpoint`` (the collector, the single writer, fences and writes it)."""
        assert self._runner is not None, "start the worker first"
        runner = self._runner
        task = decode_task(payload)
        lent = task.pop(DURABLE_FIELD, None)
        context = NO_CONTEXT
        if isinstance(lent, dict) and send_checkpoint is not None:
            send = send_checkpoint

            def save(checkpoint: JsonDict | bytes) -> bool:
                send(checkpoint if isinstance(checkpoint, bytes) else orjson.dumps(checkpoint))
                return True  # fenced, if stale, by the collector

            durability = Durability(save, lent.get("resume"), int(lent.get("attempt") or 1))
            context = RolloutContext(durability)
        try:
            result = await runner.run(task, context)
        except Exception as error:  # the collector records it as it would in process
            return encode_raised(error, {COUNTS: runner_counts(runner)})
        return encode_result(result, {COUNTS: runner_counts(runner)})

    async def close(self) -> None:
        self._runner = None
        await self._stack.aclose()

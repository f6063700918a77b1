"""``Dispatcher``: the collector's runner when rollouts run in workers (processes, Ray actors).

The collector stays the one writer: it hands the dispatcher one task at a time, as it would
hand it to an agent in process, and writes what comes back. The dispatcher sends the task to
the least-loaded live worker and returns its result; so each dispatched task gives exactly one
result (or one raised failure) and nothing is written twice, whatever happens to workers.
Either says how many times the rollout was rerun (``worker_reruns``), so its row or failure
record does.

When a worker dies, every rollout it had in flight is run again on another worker. Which of
them killed it cannot be told, so each becomes a suspect and runs *alone* on a worker (no other
rollout placed beside it); a suspect that kills its worker again is recorded as a
``worker_crash`` failure (``WorkerCrash``). So a rollout gets ``CRASHES_ALLOWED`` deaths, the
last one certainly its own, and a rollout that only shared a worker with a killer finishes.

A dead worker is replaced by a new one. If workers keep dying and no rollout finishes in
between (``lost_limit`` deaths or failed starts in a row), the dispatcher gives up: every
rollout waiting for a worker raises ``RunStopped`` and the collector stops the run, resumable.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import orjson

from palaestra.agents.base import RolloutRunner
from palaestra.agents.context import NO_CONTEXT, RolloutContext
from palaestra.agents.durable import DURABLE_FIELD
from palaestra.distributed.codec import decode_error, encode_task, result_of
from palaestra.distributed.endpoints import added_up, merged, settled
from palaestra.distributed.worker import COUNTS
from palaestra.errors import ConfigError, PalaestraError, RolloutFailure, RunStopped, WorkerCrash
from palaestra.types import AgentResult, JsonDict

_log = logging.getLogger("palaestra.distributed")

CRASHES_ALLOWED = 2
"""Worker deaths a rollout may be in flight for; the second one it ran alone."""

START_TIMEOUT = 600.0
"""Seconds a worker may take to start (the embedded model loads there: about 10 s for a 1.5B
model from disk; a Ray actor may wait for a node)."""


class WorkerLost(PalaestraError):
    """The worker died (or was killed) while the task was in flight; the dispatcher runs the
    task again elsewhere (never raised out of it)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class Worker(Protocol):
    """One worker, as the dispatcher drives it (``ProcessWorker``, ``RayWorker``); each
    subclasses this protocol, so a worker that streams no checkpoints says nothing."""

    name: str
    checkpoints: bool = False
    """Whether it streams a durable rollout's checkpoints back while it runs it
    (``run_durable``); False: a durable rollout runs on it as any other (``run``)."""

    async def start(self) -> JsonDict:
        """Start and open the run's parts: ``{"label", "facts"}`` or ``{"error": ...}``."""
        ...

    async def run(self, payload: bytes) -> bytes:
        """One encoded task to its encoded result; ``WorkerLost`` if the worker dies."""
        ...

    async def run_durable(self, payload: bytes, on_checkpoint: Callable[[bytes], object]) -> bytes:
        """``run``, each checkpoint of the rollout given to ``on_checkpoint`` as the JSON its
        agent encoded (a worker that says ``checkpoints``); by default just ``run``."""
        return await self.run(payload)

    async def stop(self) -> None: ...


WorkerFactory = Callable[[int], Worker]
"""Makes the worker of slot ``index`` (not started), for the first start and replacements."""


@dataclass(slots=True)
class _Slot:
    index: int
    worker: Worker | None = None
    in_flight: int = 0
    reserved: bool = False
    """Held for a suspect: nothing else is placed here until it has run alone."""
    generation: int = 0
    """Bumped at each replacement, so one death is handled once."""


class Dispatcher(RolloutRunner):
    """A ``RolloutRunner`` over ``count`` workers made by ``factory``."""

    def __init__(
        self, factory: WorkerFactory, count: int, *, lost_limit: int | None = None
    ) -> None:
        self.factory, self.count = factory, count
        self.lost_limit = lost_limit if lost_limit is not None else 2 * count + 2
        self.slots = [_Slot(index) for index in range(count)]
        self.label = ""
        self.facts: JsonDict = {}
        self.stopped: str | None = None
        self.lost_in_a_row = 0
        self.replaced = 0
        self._waiters: list[asyncio.Future[None]] = []
        self._replacing: set[asyncio.Task[None]] = set()
        self._counts: dict[Worker, JsonDict] = {}
        """The last counters each worker sent (``COUNTS``), a dead one's kept (``settled``)."""

    async def start(self) -> None:
        """Start every worker; the first that cannot start fails the whole (its error)."""
        workers = [self.factory(slot.index) for slot in self.slots]
        try:
            hellos = await asyncio.gather(
                *(_start(worker) for worker in workers), return_exceptions=True
            )
        except BaseException:  # cancelled (Ctrl-C) while they start: leave none behind
            await asyncio.gather(*(w.stop() for w in workers), return_exceptions=True)
            raise
        for worker, hello in zip(workers, hellos, strict=True):
            if isinstance(hello, BaseException) or "error" in hello:
                await asyncio.gather(*(w.stop() for w in workers), return_exceptions=True)
                if isinstance(hello, PalaestraError):
                    raise hello
                if isinstance(hello, BaseException):
                    raise ConfigError(f"{worker.name} could not start: {hello}") from hello
                raise decode_error(hello["error"], worker.name)
        for slot, worker in zip(self.slots, workers, strict=True):
            slot.worker = worker
        self.label, self.facts = hellos[0]["label"], hellos[0]["facts"]  # type: ignore[index]

    async def check(self) -> None:
        """Each worker checked its model when it started."""

    async def run(self, task: JsonDict, context: RolloutContext = NO_CONTEXT) -> AgentResult:
        """Run ``task`` on a worker until one returns its result.

        A durable rollout (the collector lent it a ``Durability``) runs on a worker that
        streams its checkpoints (``Worker.checkpoints``) with them going to the collector;
        when that worker dies, the attempt is renewed (``Durability.renew``: a new epoch, so
        anything the old attempt still sends is refused) and the rerun continues from the
        last checkpoint instead of from the start."""
        payload = encode_task(task)
        durability = context.durability
        deaths = 0
        while True:
            alone = deaths > 0
            slot = await self._acquire(alone=alone)
            worker, generation = slot.worker, slot.generation
            assert worker is not None
            slot.in_flight += 1
            streamed = durability if worker.checkpoints else None
            try:
                if streamed is not None:
                    lent = {"resume": streamed.resume, "attempt": streamed.attempt}
                    body = encode_task({**task, DURABLE_FIELD: lent})
                    reply = await worker.run_durable(body, streamed.save)
                else:
                    reply = await worker.run(payload)
            except WorkerLost as lost:
                deaths += 1
                self._lost(slot, generation, lost.reason)
                if streamed is not None and streamed.renew is not None:
                    streamed.renew()
                if deaths >= CRASHES_ALLOWED:
                    self._progressed()
                    crash = WorkerCrash(
                        f"the rollout was running when its worker died, {deaths} times, the "
                        f"last time alone on it ({lost.reason})"
                    )
                    crash.worker_reruns = deaths - 1  # started `deaths` times: once, then reruns
                    raise crash from None
                continue
            finally:
                slot.in_flight -= 1
                if alone:
                    slot.reserved = False
                self._wake()
            self._progressed()
            message = orjson.loads(reply)
            counts = message.pop(COUNTS, None)
            if counts is not None:
                self._counts[worker] = counts
            try:
                result = result_of(message)
            except RolloutFailure as failure:  # raised in the worker: raised here alike
                failure.worker_reruns = deaths
                raise
            result.worker_reruns = deaths
            return result

    def endpoint_stats(self) -> list[JsonDict]:
        """The workers' model pool counts added up per endpoint (``endpoints.merged``); none
        when the model is not a pool."""
        reports = list(self._counts.values())
        return merged(report["endpoints"] for report in reports if report.get("pool"))

    def worker_counts(self) -> JsonDict:
        """The workers' model and environment counters added up (``endpoints.added_up``);
        read by the ``/metrics`` thread at scrape time."""
        return added_up(list(self._counts.values()))

    async def aclose(self) -> None:
        for replacing in list(self._replacing):
            replacing.cancel()
        await asyncio.gather(*self._replacing, return_exceptions=True)
        self._stop("the run is over")
        workers = [slot.worker for slot in self.slots if slot.worker is not None]
        for slot in self.slots:
            slot.worker = None
        await asyncio.gather(*(worker.stop() for worker in workers), return_exceptions=True)

    # --- placing rollouts ---------------------------------------------------------------------

    async def _acquire(self, *, alone: bool) -> _Slot:
        """The least-loaded live worker; for a suspect, one with nothing else in flight."""
        held: _Slot | None = None
        try:
            while True:
                if self.stopped is not None:
                    raise RunStopped(self.stopped)
                if held is not None and held.worker is None:  # it died while it drained
                    held.reserved, held = False, None
                if held is None:
                    held = self._least_loaded()
                    if held is not None and not alone:
                        return held
                    if held is not None:
                        held.reserved = True
                if held is not None and held.in_flight == 0:
                    chosen, held = held, None
                    return chosen
                await self._wait()
        finally:
            if held is not None:  # cancelled or stopped while waiting
                held.reserved = False
                self._wake()

    def _least_loaded(self) -> _Slot | None:
        best: _Slot | None = None
        for slot in self.slots:
            if slot.worker is None or slot.reserved:
                continue
            if best is None or slot.in_flight < best.in_flight:
                best = slot
        return best

    async def _wait(self) -> None:
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)

    def _wake(self) -> None:
        if self._waiters:
            waiters, self._waiters = self._waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    # --- deaths and replacements --------------------------------------------------------------

    def _progressed(self) -> None:
        self.lost_in_a_row = 0

    def _lost(self, slot: _Slot, generation: int, reason: str) -> None:
        """The worker of ``slot`` died: replace it (once per death)."""
        if slot.generation != generation or slot.worker is None:
            return  # another rollout of the same worker already reported it
        dead, slot.worker = slot.worker, None
        slot.generation += 1
        if dead in self._counts:  # its counters stay counted, its gauges (live sessions) go
            self._counts[dead] = settled(self._counts[dead])
        _log.warning("%s died: %s", dead.name, reason)
        self._count_loss(f"{dead.name} died: {reason}")
        if self.stopped is None:
            replacing = asyncio.get_running_loop().create_task(self._replace(slot, dead))
            self._replacing.add(replacing)
            replacing.add_done_callback(self._replacing.discard)
        else:
            self._replacing.add(asyncio.get_running_loop().create_task(dead.stop()))
        self._wake()

    def _count_loss(self, what: str) -> None:
        self.lost_in_a_row += 1
        if self.lost_in_a_row >= self.lost_limit:
            self._stop(
                f"{self.lost_in_a_row} workers died or failed to start with no rollout "
                f"finishing in between (last: {what}); see the workers' output above, then run "
                f"the same command with --resume"
            )

    def _stop(self, reason: str) -> None:
        if self.stopped is None:
            self.stopped = reason
        self._wake()

    async def _replace(self, slot: _Slot, dead: Worker) -> None:
        await dead.stop()
        attempt = 0
        while self.stopped is None:
            self.replaced += 1
            worker = self.factory(slot.index)
            try:
                hello = await _start(worker)
            except asyncio.CancelledError:  # the run is over: leave no process behind
                await worker.stop()
                raise
            except Exception as error:
                hello = {"error": {"class": type(error).__name__, "message": str(error)}}
            if "error" not in hello and self.stopped is None:
                slot.worker = worker
                self._wake()
                return
            await worker.stop()
            if "error" in hello:
                why = hello["error"].get("message")
                self._count_loss(f"{worker.name} could not start: {why}")
            attempt += 1
            await asyncio.sleep(min(0.5 * attempt, 5.0))


async def _start(worker: Worker) -> JsonDict:
    try:
        return await asyncio.wait_for(worker.start(), START_TIMEOUT)
    except TimeoutError:
        await worker.stop()
        raise TimeoutError(f"{worker.name} did not start within {START_TIMEOUT:g} s") from None

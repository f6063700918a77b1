"""Rollouts run in workers: ``--workers N`` processes on this machine, or actors on Ray.

The collector stays the one writer. It drives a ``Dispatcher`` as it would drive an agent in
process (``RolloutRunner``: ``check``, ``run(task)``), and the dispatcher ships each task to a
worker and returns that worker's result; so the output, the lock, resume, the failures sidecar
and the aggregate are the ones of a run on one process, by construction. Each worker builds the
run's parts from the ``RunSpec`` and runs its share of the rollouts in flight in process.

::

    palaestra collect --env weather --model http://gpu:8000/v1 --workers 4
    palaestra collect --env weather --model http://gpu:8000/v1 --executor ray --ray-address auto

Neither ``import palaestra`` nor a run on one process imports anything of this package's
executors, nor Ray.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from palaestra.assembly import Runner
from palaestra.errors import ConfigError

if TYPE_CHECKING:
    from palaestra.assembly import FoundEnvironment
    from palaestra.distributed.dispatch import Dispatcher, Worker
    from palaestra.spec import RunSpec

__all__ = ["distributed", "open_executor"]


def distributed(spec: RunSpec) -> bool:
    """Whether ``spec`` asks for workers (Ray, or more than one process)."""
    options = spec.collection
    return options.executor == "ray" or (options.workers or 1) > 1


@contextlib.asynccontextmanager
async def open_executor(
    spec: RunSpec, found: FoundEnvironment | None, *, threads: int
) -> AsyncIterator[Runner]:
    """The runner of ``spec`` over its workers, started (each checked its model); stopped on
    exit. ``threads`` is the rollouts in flight of the whole run: each worker gets its share
    (and no more workers start than rollouts can be in flight)."""
    del found  # each worker finds the environment itself
    if spec.agent.url is not None:
        raise ConfigError(
            "--agent-url runs the agents on their server: --workers and --executor ray spread "
            "agents run here; run more agent servers instead"
        )
    options = spec.collection
    with contextlib.ExitStack() as stack:
        if options.executor == "ray":
            from palaestra.distributed.cluster import connected

            cpus = stack.enter_context(connected(options.ray_address))
            count = min(options.workers or cpus, threads)
            dispatcher = _ray_dispatcher(spec, count, threads, cpus)
        else:
            count = min(options.workers or 1, threads)
            dispatcher = _process_dispatcher(spec, count, threads)
        try:
            await dispatcher.start()
            yield Runner(dispatcher, dispatcher.label, dispatcher.facts)
        finally:
            await dispatcher.aclose()


def _process_dispatcher(spec: RunSpec, count: int, threads: int) -> Dispatcher:
    from palaestra.distributed.dispatch import Dispatcher
    from palaestra.distributed.process import ProcessWorker

    share = math.ceil(threads / count)

    def worker(index: int) -> Worker:
        return ProcessWorker(index, spec, share)

    return Dispatcher(worker, count)


def _ray_dispatcher(spec: RunSpec, count: int, threads: int, cpus: int) -> Dispatcher:
    from palaestra.distributed.cluster import RayWorker, actor_class
    from palaestra.distributed.dispatch import Dispatcher

    share = math.ceil(threads / count)
    actor = actor_class()
    num_cpus = min(1.0, cpus / count)  # so every worker fits the cluster, however many

    def worker(index: int) -> Worker:
        return RayWorker(index, actor, spec, share, num_cpus)

    return Dispatcher(worker, count)

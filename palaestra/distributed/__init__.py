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
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from palaestra.collection.assembly import Runner
from palaestra.errors import ConfigError

if TYPE_CHECKING:
    from palaestra.collection.assembly import FoundEnvironment
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
    """The runner of ``spec`` over its workers, stopped on exit. Its workers start when the
    collector checks it (``Executor.check``: after the output is locked and a resume found to
    be the same run). ``threads`` is the rollouts in flight of the whole run: each worker gets
    its share (and no more workers start than rollouts can be in flight)."""
    if spec.agent.url is not None:
        raise ConfigError(
            "--agent-url runs the agents on their server: --workers and --executor ray spread "
            "agents run here; run more agent servers instead"
        )
    from palaestra.distributed.executor import Executor, describe

    label, facts = await describe(spec, found)
    executor = Executor(spec, threads, label, facts)
    try:
        yield Runner(executor, label, facts)
    finally:
        await executor.aclose()

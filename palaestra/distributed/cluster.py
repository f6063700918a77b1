"""``RayWorker``: one worker of ``--executor ray``, an actor on a Ray cluster.

Each actor builds the run's parts from the ``RunSpec`` (``WorkerRuntime``) on its node and runs
the rollouts sent to it concurrently on its own event loop (an async actor). Every rollout is
one actor call whose result comes back alone as soon as it is done; nothing waits for a batch.
A dead actor (its node lost, its process killed) fails its calls with Ray's ``RayActorError``,
which the dispatcher takes as ``WorkerLost``. Ray is imported only here, when a run asks for it.

The model endpoints are reached over HTTP from the nodes; the environment runs inside the
actors. With ``--model local`` each actor loads its own embedded model, from its node's model
cache (no download at run time), so the model file must be on every node.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from palaestra.distributed.dispatch import Worker, WorkerLost
from palaestra.distributed.local_cluster import LOOPBACK, local_cluster
from palaestra.errors import ConfigError
from palaestra.types import JsonDict

if TYPE_CHECKING:
    from palaestra.spec import RunSpec

CONNECT_TIMEOUT = 5.0
"""Seconds to wait for the cluster's address to accept a connection."""

STOP_TIMEOUT = 10.0
"""Seconds an actor has to close its parts before it is killed."""


@contextlib.contextmanager
def connected(address: str | None) -> Iterator[int]:
    """Ray, joined at ``address`` (or, without one, a local cluster started here that
    listens on loopback only: ``start_local``); yields its CPUs.

    A Ray already initialised in this process (by the caller) is used as it is and left
    running; one joined here is shut down on exit, and a cluster started here stopped.
    """
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--executor ray needs Ray: pip install 'palaestra[ray]' (on every node)"
        ) from None
    with contextlib.ExitStack() as stack:
        if not ray.is_initialized():
            if address is None:
                stack.enter_context(start_local())
            else:
                _check_reachable(address)
                _join(address, f"cannot join the Ray cluster at {address}")
            stack.callback(ray.shutdown)
        resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
        yield max(1, int(resources.get("CPU", 1)))


@contextlib.contextmanager
def start_local() -> Iterator[None]:
    """Start a Ray cluster of this machine alone, for this run, and join it: every server it
    runs (GCS, raylet, object manager, workers, agents, and this driver's) listens on
    ``127.0.0.1`` only, with no dashboard, no usage reporting and no metrics collection
    (``LocalCluster``, without touching anything of Ray's in this process). Left, then
    stopped, on exit.

    A cluster whose nodes, or this driver, still have another address is stopped and
    refused: the run never goes on with a cluster that others could reach.
    """
    import ray

    with local_cluster() as cluster:
        _join(cluster.address, "cannot join the local Ray cluster")
        try:
            nodes: list[JsonDict] = ray.nodes()  # type: ignore[no-untyped-call]
            addresses = {str(node.get("NodeManagerAddress")) for node in nodes}
            addresses.add(str(ray.util.get_node_ip_address()))  # type: ignore[no-untyped-call]
            if addresses != {LOOPBACK}:
                raise ConfigError(
                    f"the local Ray cluster (Ray {ray.__version__}) started on "
                    f"{', '.join(sorted(addresses))}, not on {LOOPBACK} only: start one "
                    f"yourself as docs/distributed.md says and pass --ray-address"
                )
            yield
        finally:
            ray.shutdown()


def _join(address: str, failure: str) -> None:
    """``ray.init`` as a driver of the cluster at ``address``; ``failure`` says what failed."""
    import ray

    try:
        ray.init(
            address=address,
            include_dashboard=False,
            logging_level=logging.WARNING,
            configure_logging=False,
        )
    except (ConnectionError, ValueError, RuntimeError) as error:
        raise ConfigError(f"{failure}: {error}") from None


def _check_reachable(address: str | None) -> None:
    """A ``host:port`` (or ``ray://host:port``) that refuses connections is one clear line
    now; Ray itself would retry it for minutes. ``auto`` and None are Ray's to resolve."""
    if address is None or address == "auto" or address.startswith("local"):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT).close()
    except OSError as error:
        raise ConfigError(
            f"cannot join the Ray cluster at {address}: {error.strerror or error}"
        ) from None


def actor_class() -> Any:
    """The actor every ``RayWorker`` runs (defined here, so Ray loads only with a Ray run)."""
    import ray

    @ray.remote(max_restarts=0, max_task_retries=0)
    class RolloutActor:
        def __init__(self, spec: RunSpec, threads: int) -> None:
            from palaestra.distributed.worker import WorkerRuntime

            self.runtime = WorkerRuntime(spec, threads)

        async def start(self) -> JsonDict:
            hello = await self.runtime.start()
            return {**hello, "pid": os.getpid()}

        async def run(self, payload: bytes) -> bytes:
            return await self.runtime.run(payload)

        async def close(self) -> None:
            await self.runtime.close()

    return RolloutActor


class RayWorker(Worker):
    """A worker actor, seen from the collector."""

    def __init__(
        self, index: int, actor: Any, spec: RunSpec, threads: int, num_cpus: float
    ) -> None:
        self.name = f"Ray worker {index}"
        self._class, self.spec, self.threads, self.num_cpus = actor, spec, threads, num_cpus
        self.actor: Any = None
        self.pid: int | None = None

    async def start(self) -> JsonDict:
        from ray.exceptions import RayError

        self.actor = self._class.options(
            num_cpus=self.num_cpus,
            scheduling_strategy="SPREAD",
            max_concurrency=max(1000, self.threads + 8),  # the rollouts it is sent, and close
        ).remote(self.spec, self.threads)
        try:
            hello: JsonDict = await self.actor.start.remote()
        except RayError as error:
            return {"error": {"class": "", "message": _first_line(error)}}
        self.pid = hello.pop("pid", None)
        return hello

    async def run(self, payload: bytes) -> bytes:
        from ray.exceptions import RayError

        try:
            reply: bytes = await self.actor.run.remote(payload)
        except RayError as error:  # the actor died (or Ray lost the call): run it elsewhere
            raise WorkerLost(_first_line(error)) from None
        return reply

    async def stop(self) -> None:
        import asyncio

        import ray

        if self.actor is None:
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.actor.close.remote(), STOP_TIMEOUT)
        with contextlib.suppress(Exception):
            ray.kill(self.actor)
        self.actor = None


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]

"""``Executor``: the collector's runner over workers, which start only when it checks them.

The collector locks its output and checks that a resume is the same run before it calls the
runner's ``check``; the workers (and, with Ray, the cluster joined or started for the run) start
there, so a refused run pays for none of them. What the identity check needs of the run (its
label and facts: environment, agent, model) is worked out here from the spec, as each worker
will (``describe``), and each worker's own account is compared with it once they started.
"""

from __future__ import annotations

import contextlib
import math
from typing import TYPE_CHECKING

import orjson

from palaestra.agents.base import RolloutRunner
from palaestra.agents.context import NO_CONTEXT, RolloutContext
from palaestra.collection.assembly import bound_facts, build_agent, served_version
from palaestra.errors import ConfigError
from palaestra.types import JsonDict

if TYPE_CHECKING:
    from palaestra.collection.assembly import FoundEnvironment
    from palaestra.distributed.dispatch import Dispatcher, Worker, WorkerFactory
    from palaestra.spec import RunSpec
    from palaestra.types import AgentResult


async def describe(spec: RunSpec, found: FoundEnvironment | None) -> tuple[str, JsonDict]:
    """The run's label (``<environment>_<agent>``) and identity facts, as its workers will
    report them, without starting any: a served environment is asked its agent (one ``GET``),
    one run here is read from its class (or the instance given), not built."""
    served: JsonDict = {}
    if spec.env.url is not None:
        from palaestra.remote.env import RemoteEnvironmentClient

        remote = await RemoteEnvironmentClient.connect(spec.env.url, token=spec.env.token)
        await remote.aclose()
        env_name, default = remote.name, remote.default_agent
        served = served_version(remote)  # as each worker's runner records it
    elif found is not None:
        environment = found.instance if found.instance is not None else found.cls
        env_name, default = environment.name, environment.default_agent
    else:
        raise ConfigError("name an environment (a name, ./file.py or module:Class) or its url")
    agent = build_agent(spec.agent, default)  # a wrong agent option is one line, before workers
    facts = bound_facts(spec, found, spec.agent.name or default)
    if served:
        facts["env"] = {**(facts["env"] or {}), **served}
    return f"{env_name}_{agent.name}", facts


class Executor(RolloutRunner):
    """A ``RolloutRunner`` whose ``check`` starts the workers (each checks its model), then
    dispatches every task to them; ``aclose`` stops them."""

    def __init__(self, spec: RunSpec, threads: int, label: str, facts: JsonDict) -> None:
        self.spec, self.threads = spec, threads
        self.label, self.facts = label, facts
        self.dispatcher: Dispatcher | None = None
        self._cluster = contextlib.ExitStack()

    async def check(self) -> None:
        if self.dispatcher is not None:
            return
        self.dispatcher = dispatcher = self._dispatcher()
        await dispatcher.start()
        if _canonical(dispatcher.label, dispatcher.facts) != _canonical(self.label, self.facts):
            raise ConfigError(
                f"the workers describe the run as {dispatcher.label} {_text(dispatcher.facts)}, "
                f"not as {self.label} {_text(self.facts)} worked out before they started: does "
                f"the environment set its name or default_agent in __init__? Set them on its class"
            )

    async def run(self, task: JsonDict, context: RolloutContext = NO_CONTEXT) -> AgentResult:
        assert self.dispatcher is not None, "check the runner first"
        return await self.dispatcher.run(task, context)

    def endpoint_stats(self) -> list[JsonDict]:
        return self.dispatcher.endpoint_stats() if self.dispatcher is not None else []

    def worker_counts(self) -> JsonDict:
        """The workers' model and environment counters added up (none before they start)."""
        return self.dispatcher.worker_counts() if self.dispatcher is not None else {}

    async def aclose(self) -> None:
        try:
            if self.dispatcher is not None:
                await self.dispatcher.aclose()
        finally:
            self._cluster.close()

    def _dispatcher(self) -> Dispatcher:
        from palaestra.distributed.dispatch import Dispatcher

        spec, options = self.spec, self.spec.collection
        factory: WorkerFactory
        if options.executor == "ray":
            from palaestra.distributed.cluster import RayWorker, actor_class, connected

            cpus = self._cluster.enter_context(connected(options.ray_address))
            count = min(options.workers or cpus, self.threads)
            share, actor = math.ceil(self.threads / count), actor_class()
            num_cpus = min(1.0, cpus / count)  # so every worker fits the cluster, however many

            def factory(index: int) -> Worker:
                return RayWorker(index, actor, spec, share, num_cpus)

        else:
            from palaestra.distributed import shipping
            from palaestra.distributed.process import ProcessWorker

            count = min(options.workers or 1, self.threads)
            setup = shipping.dumps((spec, math.ceil(self.threads / count)))

            def factory(index: int) -> Worker:
                return ProcessWorker(index, setup)

        return Dispatcher(factory, count)


def _canonical(label: str, facts: JsonDict) -> bytes:
    """What is compared: the facts as the identity file holds them (JSON, keys sorted)."""
    return orjson.dumps([label, facts], option=orjson.OPT_SORT_KEYS, default=str)


def _text(facts: JsonDict) -> str:
    return orjson.dumps(facts, option=orjson.OPT_SORT_KEYS, default=str).decode()[:300]

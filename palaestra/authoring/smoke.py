"""The smoke run: a couple of example tasks collected end to end with a real model.

It goes through palaestra's own parts — the collector writing its files, the environment's
agent, ``LocalEnvironmentClient``, the model backend — with two instruments a plain
``palaestra.collect`` has no room for:

- the client's session store counts the sessions opened and the ones their rollout closed, so
  a session left open (an agent that forgot ``close``, a ``close`` that raised) shows;
- the model is wrapped to add up the CPU time its calls spend in this process.

The rollouts run side by side (``SmokeOptions.concurrency``, two by default), as every real
run does, so an environment whose seed, tools or verification are not safe from several
worker threads at once fails here, not in a user's first run. The embedded model still
answers one request at a time (it is one llama.cpp thread); at two rollouts in flight one
rollout's environment work overlaps the other's model call, which is the point.

The framework's CPU per rollout is then the process CPU time of the whole collection minus
the model's share, divided by the rollouts. The model's share is counted where it is spent,
so overlapping rollouts do not blur it: the steps of each model call's coroutine on the event
loop's thread (a remote model's client, an in-process Python model), timed one by one with
the thread's CPU clock, plus what the model reports for threads of its own
(``ModelStats.cpu_seconds``: the embedded model's llama.cpp thread, its load included). What
remains is palaestra's and the environment's code (seed, tools, verify, close), the agent,
and writing the rows.
"""

from __future__ import annotations

import inspect
import tempfile
import time
from collections import Counter
from collections.abc import Coroutine, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from palaestra.agents.base import BoundAgent
from palaestra.agents.registry import AGENTS, make_agent
from palaestra.authoring.report import Check, counted
from palaestra.collection.assembly import AGENT_REF_TYPE, build_model
from palaestra.collection.collector import CollectConfig, RunSummary
from palaestra.collection.collector import collect as run_collection
from palaestra.environment.base import Environment
from palaestra.environment.running.client import LocalEnvironmentClient
from palaestra.environment.sessions import Session, SessionStore
from palaestra.errors import ConfigError, PalaestraError
from palaestra.models.base import Model, ModelStats
from palaestra.spec import ModelConfig
from palaestra.types import FailureKind, JsonDict

OWN_FAILURES = frozenset({FailureKind.INTERNAL_ERROR, FailureKind.SESSION_LOST})
"""Failure kinds that are palaestra's own doing in a run in this process: an error in the
framework, or a session the in-process client lost."""
ENVIRONMENT_FAILURES = frozenset({FailureKind.ENV_ERROR})
"""The environment's own code raised in seed, reset, step or close (``EnvironmentFailure``):
no answer of the model excuses it, and rollouts run side by side make an environment that is
not safe from several threads show here. Both sets fail the smoke run; the other kinds are the
model's (model_error) or the environment's limits and verdicts on what the model did
(tool_error, verifier_error, timeout, ...), and are reported but do not fail it: a weak model
may well provoke them."""


@dataclass(frozen=True, slots=True)
class SmokeOptions:
    """How big the smoke run is. Small by default: it checks wiring, not the model."""

    tasks: int = 2
    model: str | ModelConfig | Model = "local"
    """``local`` (the embedded model), a base URL or a configured name, a ``ModelConfig``,
    or a ``Model`` object (used as it is, not closed)."""
    max_output_tokens: int = 96
    max_steps: int = 3
    temperature: float = 0.0
    concurrency: int = 2
    """Rollouts in flight at once: above one, so an environment that is not safe under
    concurrent rollouts fails its smoke run."""


class CountingSessions(SessionStore):
    """A session store that counts what it opened and what ``close`` took out of it."""

    def __init__(self, ttl: float) -> None:
        super().__init__(ttl)
        self.opened = 0
        self.closed = 0

    def open(self, task: JsonDict, state: Any) -> Session:
        self.opened += 1
        return super().open(task, state)

    def pop(self, session_id: str) -> Session | None:
        session = super().pop(session_id)
        self.closed += session is not None
        return session


class TimedModel:
    """A model whose calls add up the CPU time they spend in this process: the steps of their
    coroutines on this thread, and the model's own threads (``ModelStats.cpu_seconds``)."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.name = model.name
        self.stats: ModelStats = model.stats
        self.loop_cpu_seconds = 0.0
        self.calls = 0
        self._threads_before = model.stats.cpu_seconds

    @property
    def cpu_seconds(self) -> float:
        return self.loop_cpu_seconds + self.stats.cpu_seconds - self._threads_before

    async def respond(self, params: JsonDict) -> JsonDict:
        try:
            answer: JsonDict = await _Timed(self.model.respond(params), self)
            return answer
        finally:
            self.calls += 1

    async def check(self) -> None:
        await _Timed(self.model.check(), self)

    async def aclose(self) -> None:
        await self.model.aclose()


class _Timed:
    """Awaiting this runs ``coroutine`` step by step (PEP 380's ``yield from``, spelled out),
    adding each step's CPU time on this thread to ``into.loop_cpu_seconds``: the coroutine's
    own work, not that of the other rollouts that run while it waits."""

    __slots__ = ("coroutine", "into")

    def __init__(self, coroutine: Coroutine[Any, Any, Any], into: TimedModel) -> None:
        self.coroutine, self.into = coroutine, into

    def __await__(self) -> Generator[Any, Any, Any]:
        coroutine = self.coroutine
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            started = time.thread_time()
            try:
                message = coroutine.send(sent) if thrown is None else coroutine.throw(thrown)
            except StopIteration as done:
                return done.value
            finally:
                self.into.loop_cpu_seconds += time.thread_time() - started
            try:
                sent, thrown = (yield message), None
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as error:  # a cancellation, above all: pass it in
                sent, thrown = None, error


async def smoke_checks(
    environment: Environment,
    tasks: Path,
    options: SmokeOptions,
    *,
    user_model: Model | None = None,
) -> list[Check]:
    """Collect ``options.tasks`` of ``tasks`` with ``options.model``: the smoke, sessions and
    CPU checks. ``environment`` is this run's own instance (it is closed at the end);
    ``user_model`` is lent to its simulated user, if any (the caller closes it)."""
    client = LocalEnvironmentClient(
        environment, threads=max(4, options.concurrency), user_model=user_model
    )
    sessions = CountingSessions(environment.session_ttl)
    client.sessions = sessions
    try:
        agent = make_agent(environment.default_agent, **_agent_options(environment, options))
        model, overrides, owned = _model(options)
    except ConfigError as error:
        await client.aclose()
        return _not_run(f"could not start: {error}")
    timed = TimedModel(model)
    with tempfile.TemporaryDirectory(prefix="palaestra-test-") as work:
        config = CollectConfig(
            input=tasks,
            output=Path(work) / "smoke.jsonl",
            concurrency=options.concurrency,
            limit=options.tasks,
            overrides=overrides,
            agent_ref={"type": AGENT_REF_TYPE, "name": f"{environment.name}_{agent.name}"},
        )
        started, cpu_started = time.perf_counter(), time.process_time()
        try:
            summary = await run_collection(BoundAgent(agent, client, timed), config, _Silent())
        except PalaestraError as error:
            return _not_run(f"the collection stopped: {error}")
        finally:
            cpu = time.process_time() - cpu_started
            wall = time.perf_counter() - started
            left_open = len(sessions)
            await client.aclose()
            if owned:
                await model.aclose()
    rollouts = summary.done + summary.failed
    return [
        _smoke_check(summary, timed, wall),
        _sessions_check(sessions, left_open, rollouts),
        _cpu_check(cpu, timed.cpu_seconds, rollouts),
    ]


def _not_run(reason: str) -> list[Check]:
    return [
        Check.failed("smoke run", reason),
        Check.skipped("sessions closed", "the smoke run did not run"),
        Check.skipped("framework CPU", "the smoke run did not run"),
    ]


def _model(options: SmokeOptions) -> tuple[Model, JsonDict, bool]:
    """The smoke run's model, its sampling overrides, and whether this run owns (closes) it."""
    from palaestra.models.resolve import model_config

    sampling: JsonDict = {
        "max_output_tokens": options.max_output_tokens,
        "temperature": options.temperature,
    }
    given = options.model
    if isinstance(given, str):
        given = model_config(given)
    if isinstance(given, ModelConfig):
        return build_model(given), {**given.sampling, **sampling}, True
    return given, sampling, False


def _agent_options(environment: Environment, options: SmokeOptions) -> JsonDict:
    factory = AGENTS.load(environment.default_agent).value
    try:
        takes = "max_steps" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        takes = False
    return {"max_steps": options.max_steps} if takes else {}


def _smoke_check(summary: RunSummary, model: TimedModel, wall: float) -> Check:
    name = "smoke run"
    rollouts = summary.done + summary.failed
    kinds = Counter({FailureKind(kind): n for kind, n in summary.failures.items()})
    details: JsonDict = {
        "rollouts": rollouts,
        "scored": summary.done,
        "failures": {str(kind): n for kind, n in kinds.items()},
        "reasons": dict(summary.reasons),
        "model": model.name,
        "model_calls": model.calls,
        "seconds": round(wall, 3),
    }
    if summary.stopped_reason is not None:
        return Check.failed(name, f"the run stopped: {summary.stopped_reason}", **details)
    if rollouts == 0:
        return Check.failed(name, "no rollout ran", **details)
    own = sorted(str(kind) for kind in kinds if kind in OWN_FAILURES)
    first = next(iter(summary.reasons), "")
    if own:
        return Check.failed(
            name, f"palaestra's own failures ({', '.join(own)}): {first}", **details
        )
    raised = sorted(str(kind) for kind in kinds if kind in ENVIRONMENT_FAILURES)
    if raised:
        reason = next((r for r in summary.reasons if r.split(":")[0] in raised), first)
        return Check.failed(
            name, f"the environment's code raised ({', '.join(raised)}): {reason}", **details
        )
    mean = summary.reward_sum / summary.done if summary.done else None
    text = (
        f"{counted(rollouts, 'rollout')} with {model.name} in {wall:.1f} s: {summary.done} scored"
        + (f" (mean reward {mean:.2f})" if mean is not None else "")
        + f", {summary.failed} failed"
    )
    if summary.failed:
        text += f" (not palaestra's: {first})"
    return Check.passed(name, text, **details)


def _sessions_check(sessions: CountingSessions, left_open: int, rollouts: int) -> Check:
    name = "sessions closed"
    counts = {"opened": sessions.opened, "closed": sessions.closed, "left_open": left_open}
    if rollouts == 0:
        return Check.skipped(name, "no rollout ran", **counts)
    if sessions.opened == 0:
        return Check.failed(name, "no session was opened", **counts)
    if left_open or sessions.closed != sessions.opened:
        return Check.failed(
            name,
            f"{counted(sessions.opened, 'session')} opened, {sessions.closed} closed by their "
            f"rollout, {left_open} still open when the run ended",
            **counts,
        )
    return Check.passed(
        name, f"{counted(sessions.opened, 'session')} opened, all closed by their rollout", **counts
    )


def _cpu_check(cpu: float, model_cpu: float, rollouts: int) -> Check:
    name = "framework CPU"
    own = max(cpu - model_cpu, 0.0)
    details = {
        "cpu_seconds": round(cpu, 4),
        "model_cpu_seconds": round(model_cpu, 4),
        "framework_cpu_seconds": round(own, 4),
        "per_rollout_ms": round(own / rollouts * 1000, 3) if rollouts else None,
    }
    if not rollouts:
        return Check.skipped(name, "no rollout ran", **details)
    return Check.passed(
        name,
        f"{own / rollouts * 1000:.1f} ms of CPU per rollout outside the model "
        f"(process {cpu:.2f} s, model {model_cpu:.2f} s, {counted(rollouts, 'rollout')})",
        **details,
    )


class _Silent:
    """The collector's progress, unseen: the checks report what matters."""

    def start(self, summary: RunSummary) -> None:
        pass

    def update(self, summary: RunSummary) -> None:
        pass

    def message(self, text: str) -> None:
        pass

    def stop(self) -> None:
        pass

"""How an agent reaches an environment: the ``EnvironmentClient`` interface.

The agent never touches an ``Environment`` directly; it talks to a client. The in-process
client below calls the environment's methods with no HTTP hop; a remote client speaks the
NeMo Gym resources-server protocol. An agent cannot tell them apart.

How the in-process client calls environment code (seed, tools, verify, close, reset, step,
user_turn):

- ``async def`` code runs on the event loop, within its time limit.
- Plain (synchronous) code runs in a worker thread (``palaestra.environment.running.threads``),
  within its time limit, so a slow or stuck call stalls only its own rollout. A call that
  overruns fails its rollout as ``timeout``; its thread is abandoned and counted
  (``stuck_threads``).
- palaestra's own defaults (``Environment.seed``, ``close``, ``StepEnvironment.verify``) are
  trivial and run inline.

The limits are the environment's ``tool_timeout`` (tools, ``reset``, ``step``),
``verify_timeout``, ``seed_timeout``, ``close_timeout`` and ``user_turn_timeout``. Whatever the
code raises is mapped once, by a ``Boundary`` per entry point
(``palaestra.environment.running.boundary``).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Generator
from types import CoroutineType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import orjson
import pydantic

from palaestra.environment.base import Environment, restorable
from palaestra.environment.context import EnvironmentContext
from palaestra.environment.running.boundary import Boundary, Overran, traceback_frames
from palaestra.environment.running.threads import ThreadRunner
from palaestra.environment.sessions import Session, SessionStore
from palaestra.environment.step import StepEnvironment
from palaestra.environment.users import UserTurn
from palaestra.environment.verdicts import as_verdict, finite
from palaestra.errors import (
    EnvironmentFailure,
    EnvironmentTimeout,
    RolloutFailure,
    ToolCallRejected,
    ToolFailure,
    ToolTimeout,
    VerifierFailure,
    VerifierTimeout,
)
from palaestra.types import JsonDict, StepResult, ToolOutput, Verdict, content_parts

__all__ = [
    "EnvironmentClient",
    "LocalEnvironmentClient",
    "StepEnvironmentClient",
    "as_verdict",
    "tool_output",
    "tool_output_text",
]

if TYPE_CHECKING:
    from palaestra.models.base import Model
    from palaestra.sandbox.pool import WorkerPool

UNKNOWN_TOOL = "(unknown)"
"""How tool metrics name a call of a tool the environment does not have (any name a model
makes up counts as this one, so the metric's labels stay bounded)."""
REJECTED = "rejected"

DEFAULT_THREADS = 64
"""Worker threads for synchronous environment code, unless the runner says how many
(``palaestra collect`` passes its ``--concurrency``). Started on demand: unused ones cost
nothing."""


@runtime_checkable
class EnvironmentClient(Protocol):
    """The environment as an agent sees it: sessions, tool calls, the user and verification."""

    name: str
    has_user: bool
    """Whether the environment has a simulated user (``user_turn``): known once, when the
    client is made, so an agent asks for user turns only where there is a user."""
    ending_tools: frozenset[str]
    """The tools a call of which, when it runs, ends the episode (``tool(ends_episode=True)``:
    ``submit``): the agent asks the model no more after one."""
    restorable: bool
    """Whether the client can export a session's state (``export_state``) and open a session
    from one (``restore``): its environment implements ``export_state`` and
    ``restore_state``. Only then does a rollout checkpoint (``palaestra.agents.durable``)."""

    def tools(self) -> list[JsonDict]: ...

    async def seed(self, task: JsonDict) -> str:
        """Start a session for ``task``; return its id."""
        ...

    async def call_tool(self, session_id: str, name: str, arguments: JsonDict) -> ToolOutput:
        """Run a tool; return its output as the model will read it: text, or content parts
        (text and images) when the tool returned a list of them.

        Raises ``ToolCallRejected`` when the call is the model's mistake, ``ToolFailure``
        when the tool itself broke.
        """
        ...

    async def user_turn(self, session_id: str, conversation: list[JsonDict]) -> UserTurn | None:
        """The user's answer to the policy's last message (``Environment.user_turn``); None:
        no user. Raises ``UserModelFailure`` (``user_model_error``) when the user's model
        failed, an ``EnvironmentFailure`` when the environment's code did."""
        ...

    async def verify(self, session_id: str, task: JsonDict, response: JsonDict) -> Verdict: ...

    async def close(self, session_id: str) -> None: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class StepEnvironmentClient(EnvironmentClient, Protocol):
    """An environment client that also speaks the turn-based reset/step protocol."""

    async def reset(self, session_id: str) -> str: ...

    async def step(self, session_id: str, action: str) -> StepResult: ...


INLINE, ASYNC, THREAD = 0, 1, 2
"""How an entry point is called: inline (palaestra's own trivial defaults), awaited on the
loop (a coroutine function) or in a worker thread (plain code)."""


class Entry:
    """One entry point into environment code: how to call it, its limit and its boundary."""

    __slots__ = ("boundary", "function", "mode", "seconds")

    def __init__(
        self, function: Callable[..., Any], seconds: float, boundary: Boundary, mode: int
    ) -> None:
        self.function, self.seconds, self.boundary, self.mode = function, seconds, boundary, mode

    @classmethod
    def of(
        cls,
        function: Callable[..., Any],
        seconds: float,
        what: str,
        failure: type[RolloutFailure] = EnvironmentFailure,
        timeout: type[RolloutFailure] = EnvironmentTimeout,
        *,
        rejects: bool = False,
    ) -> Entry:
        """``function`` (a bound method of the environment) behind its limit and boundary;
        ``what`` names it in failures. A failure is ``failure`` (``env_error`` unless said)."""
        plain = getattr(function, "__func__", function)
        if inspect.iscoroutinefunction(function):
            mode = ASYNC
        elif getattr(plain, "__module__", "") in _OWN_DEFAULTS:
            mode = INLINE
        else:
            mode = THREAD
        return cls(
            function, seconds, Boundary(failure, timeout, what, plain, rejects=rejects), mode
        )

    @classmethod
    def on_loop(cls, function: Callable[..., Any], seconds: float, what: str) -> Entry:
        """As ``of``, but plain code runs inline too, never in a thread (``export_state``: once
        per turn, and cheap)."""
        plain = getattr(function, "__func__", function)
        boundary = Boundary(EnvironmentFailure, EnvironmentTimeout, what, plain)
        mode = ASYNC if inspect.iscoroutinefunction(function) else INLINE
        return cls(function, seconds, boundary, mode)


_OWN_DEFAULTS = frozenset({Environment.__module__, StepEnvironment.__module__})


def tool_entries(env: Environment) -> dict[str, Entry]:
    """Each tool's entry point by name: its failure is ``tool_error``, and a call the model got
    wrong is rejected back to it (``ToolCallRejected``)."""
    return {
        name: Entry.of(
            spec.function,
            env.tool_timeout,
            f"tool '{name}'",
            ToolFailure,
            ToolTimeout,
            rejects=True,
        )
        for name, spec in env.tool_specs.items()
    }


def step_entries(env: Environment) -> tuple[Entry | None, Entry | None]:
    """``reset`` and ``step`` of a turn-based environment; ``None`` for another."""
    if not isinstance(env, StepEnvironment):
        return None, None
    reset = Entry.of(env.reset, env.tool_timeout, "reset")
    return reset, Entry.of(env.step, env.tool_timeout, "step")


_NONE: JsonDict = {}  # no keyword arguments (never written to)


class LocalEnvironmentClient:
    """Runs an ``Environment`` in this process: direct method calls, no serialisation.

    ``threads`` bounds the worker threads that run synchronous environment code (see the
    module docstring); give it at least the number of rollouts in flight. ``user_model`` is
    the run's user model (``--user-model``), lent to the environment through its context;
    the caller owns it (opens and closes it).
    """

    def __init__(
        self,
        environment: Environment,
        *,
        threads: int = DEFAULT_THREADS,
        user_model: Model | None = None,
    ) -> None:
        self.environment = env = environment
        self.name = env.name
        self.has_user = has_user(env)
        self.restorable = restorable(env)
        """Whether the environment exports and restores its state (``Environment.
        export_state``): an agent then checkpoints its rollouts at turn boundaries."""
        self.sessions = SessionStore(env.session_ttl)
        self._tools = env.tools()
        self.ending_tools = ending_tools(env)
        self.tool_calls: Counter[str] = Counter()
        """Calls of each tool by name (names the environment lacks count as ``UNKNOWN_TOOL``)."""
        self.tool_errors: Counter[tuple[str, str]] = Counter()
        """Calls that raised, by (tool, kind): ``rejected`` (the model's mistake) or the
        failure's kind (``tool_error``, ``timeout``). Both are read by ``/metrics``."""
        self._pool: WorkerPool | None = None
        self._threads = ThreadRunner(threads)
        env.setup(EnvironmentContext(worker_pool=self._worker_pool, user_model=user_model))
        self._seed = Entry.of(env.seed, env.seed_timeout, "seed")
        self._verify = Entry.of(
            env.verify, env.verify_timeout, "verify", VerifierFailure, VerifierTimeout
        )
        self._close = Entry.of(env.close, env.close_timeout, "close")
        self._user_turn = Entry.of(env.user_turn, env.user_turn_timeout, "user_turn")
        self._restore = Entry.of(env.restore_state, env.seed_timeout, "restore")
        self._export = Entry.on_loop(env.export_state, env.tool_timeout, "export_state")
        self._tool_entries = tool_entries(env)
        self._reset, self._step = step_entries(env)

    @property
    def stuck_threads(self) -> int:
        """Threads still running a call abandoned at its time limit."""
        return self._threads.stuck

    def tools(self) -> list[JsonDict]:
        return self._tools

    async def seed(self, task: JsonDict) -> str:
        for expired in self.sessions.sweep():
            await self._close_quietly(expired)
        state = await self._run(self._seed, (task,))
        return self.sessions.open(task, state).id

    async def restore(
        self, task: JsonDict, state: JsonDict, step_rewards: list[float] | None = None
    ) -> str:
        """Open a session for ``task`` from an exported state (``Environment.restore_state``)
        instead of seeding it, with the rewards of the steps already taken (a turn-based
        episode's); return its id."""
        for expired in self.sessions.sweep():
            await self._close_quietly(expired)
        restored = await self._run(self._restore, (task, state))
        session = self.sessions.open(task, restored)
        if step_rewards:
            session.step_rewards = [float(reward) for reward in step_rewards]
        return session.id

    async def export_state(self, session_id: str) -> JsonDict:
        """The session's state as JSON (``Environment.export_state``), called on the loop
        (plain code too: it runs once per turn and should be cheap, so no thread hop).

        A state that is not a JSON object is the environment's bug: ``EnvironmentFailure``.
        """
        state = await self._run(self._export, (self.sessions.get(session_id),))
        if not isinstance(state, dict):
            raise EnvironmentFailure(
                f"export_state returned {type(state).__name__}, not a JSON object"
            )
        return state

    async def call_tool(self, session_id: str, name: str, arguments: JsonDict) -> ToolOutput:
        return tool_output(await self.call_tool_value(session_id, name, arguments))

    async def call_tool_value(self, session_id: str, name: str, arguments: JsonDict) -> object:
        """Run a tool and return what it returned (the HTTP server sends it as JSON)."""
        spec = self.environment.tool_specs.get(name)
        if spec is None:
            self.tool_calls[UNKNOWN_TOOL] += 1
            self.tool_errors[UNKNOWN_TOOL, REJECTED] += 1
            known = ", ".join(self.environment.tool_specs) or "none"
            raise ToolCallRejected(f"unknown tool '{name}'; available tools: {known}")
        self.tool_calls[name] += 1  # one count: the tool metrics cost nothing else per call
        try:
            parsed = spec.arguments.model_validate(arguments)
        except pydantic.ValidationError as error:
            self.tool_errors[name, REJECTED] += 1
            raise ToolCallRejected(
                f"invalid arguments for tool '{name}': {_validation_summary(error)}"
            ) from error
        session = self.sessions.get(session_id)
        kwargs = dict(parsed)
        if spec.wants_session:
            kwargs["session"] = session
        try:
            return await self._run(self._tool_entries[name], (self.environment,), kwargs)
        except RolloutFailure as failure:
            self.tool_errors[name, str(failure.kind)] += 1
            raise

    async def verify(self, session_id: str, task: JsonDict, response: JsonDict) -> Verdict:
        session = self.sessions.get(session_id)
        return as_verdict(await self._run(self._verify, (session, response)))

    async def user_turn(self, session_id: str, conversation: list[JsonDict]) -> UserTurn | None:
        """The user's next message (``Environment.user_turn``), within ``user_turn_timeout``.

        ``UserModelFailure`` passes through the boundary as it is (``user_model_error``);
        anything else the environment's code raised is an ``env_error``.
        """
        if not self.has_user:
            return None
        session = self.sessions.get(session_id)
        turn = await self._run(self._user_turn, (session, conversation))
        if turn is None or isinstance(turn, UserTurn):
            return turn
        raise EnvironmentFailure(
            f"user_turn returned {type(turn).__name__}, not a UserTurn or None"
        )

    async def reset(self, session_id: str) -> str:
        """Start a turn-based episode (``StepEnvironment``); return the first observation."""
        session = self.sessions.get(session_id)
        return str(await self._run(self._step_entry(self._reset), (session,)))

    async def step(self, session_id: str, action: str) -> StepResult:
        """Apply the model's action; the step's reward is recorded in the session."""
        session = self.sessions.get(session_id)
        result = await self._run(self._step_entry(self._step), (session, action))
        if not isinstance(result, StepResult):
            raise EnvironmentFailure(f"step returned {type(result).__name__}, not a StepResult")
        if not finite(result.reward):
            raise VerifierFailure(
                f"step returned a reward of {result.reward!r}, not a finite number"
            )
        session.step_rewards.append(float(result.reward))
        return result

    def _step_entry(self, entry: Entry | None) -> Entry:
        if entry is None:
            raise EnvironmentFailure(
                f"environment '{self.name}' has no reset/step: use a tool-calling agent"
            )
        return entry

    async def close(self, session_id: str) -> None:
        session = self.sessions.pop(session_id)
        if session is not None:
            await self._run(self._close, (session,))

    async def aclose(self) -> None:
        for session in self.sessions.drain():
            await self._close_quietly(session)
        try:
            await self.environment.aclose()
        finally:
            self._threads.close()
            if self._pool is not None:
                pool, self._pool = self._pool, None
                await pool.aclose()

    async def _run(self, entry: Entry, args: tuple[Any, ...], kwargs: JsonDict = _NONE) -> Any:
        """Call an entry point the way its kind asks (module docstring), inside its boundary.

        Spelled out for speed (a trivial rollout makes four of these calls): the boundary's
        mapping in an ``except`` (free when nothing is raised), and a coroutine stepped here
        once, so one that finishes without suspending needs no timer (``within``).
        """
        try:
            if entry.mode == ASYNC:
                result = entry.function(*args, **kwargs)
                if type(result) is CoroutineType:
                    try:
                        suspended_on = result.send(None)
                    except StopIteration as done:
                        return done.value
                    return await within(entry.seconds, _Resumed(result, suspended_on))
            elif entry.mode == THREAD:
                result = await self._threads.run(entry.seconds, entry.function, *args, **kwargs)
            else:
                return entry.function(*args, **kwargs)
            if not inspect.isawaitable(result):
                return result  # plain code, or an "async" function that answered at once
            return await within(entry.seconds, result)
        except Exception as error:
            entry.boundary.raise_for(error)
            raise

    def _worker_pool(self) -> WorkerPool:
        """The environment's warm worker pool (``run_in_pool``): created on first use only."""
        if self._pool is None:
            from palaestra.sandbox.pool import WorkerPool

            self._pool = WorkerPool(self.environment.pool_workers)
        return self._pool

    async def _close_quietly(self, session: Session) -> None:
        # An expired session's close failing must not fail an unrelated rollout.
        with contextlib.suppress(Exception):
            await self._run(self._close, (session,))


def has_user(environment: Environment | type[Environment]) -> bool:
    """Whether ``environment`` (or its class) overrides ``Environment.user_turn`` (has a
    simulated user). An instance may say so itself (``user_turns``, a bool): one class can
    serve tasks with a next user turn and tasks without (Harbor's multi-step tasks)."""
    if not isinstance(environment, type):
        declared = getattr(environment, "user_turns", None)
        if isinstance(declared, bool):
            return declared
    cls = environment if isinstance(environment, type) else type(environment)
    return getattr(cls, "user_turn", None) is not Environment.user_turn


def ending_tools(environment: Environment) -> frozenset[str]:
    """The names of ``environment``'s tools that end the episode (``ToolSpec.ends_episode``)."""
    return frozenset(name for name, spec in environment.tool_specs.items() if spec.ends_episode)


async def within(seconds: float, awaitable: Awaitable[Any]) -> Any:
    """Await ``awaitable`` for at most ``seconds``; ``Overran`` names where it was then."""
    timeout = asyncio.timeout(seconds)
    try:
        async with timeout:
            return await awaitable
    except TimeoutError as error:
        if not timeout.expired():
            raise  # the environment's own TimeoutError: a failure like any other
        # The cancellation that stopped it went through its frames: that is where it waited.
        cancelled = error.__context__
        frames = traceback_frames(cancelled.__traceback__) if cancelled is not None else []
        raise Overran(seconds, frames) from None


class _Resumed:
    """Awaiting this carries on a coroutine that already yielded ``first`` (PEP 380's
    ``yield from``, spelled out: what it yields goes to the task, what the task sends or
    throws goes back into it)."""

    __slots__ = ("coroutine", "first")

    def __init__(self, coroutine: Coroutine[Any, Any, Any], first: Any) -> None:
        self.coroutine, self.first = coroutine, first

    def __await__(self) -> Generator[Any, Any, Any]:
        coroutine, message = self.coroutine, self.first
        while True:
            try:
                sent = yield message
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as thrown:  # a cancellation, above all: pass it in
                try:
                    message = coroutine.throw(thrown)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    message = coroutine.send(sent)
                except StopIteration as done:
                    return done.value


def tool_output(result: object) -> ToolOutput:
    """A tool's return value as the model reads it: a list of content parts (``input_text``,
    ``input_image``) as they are, strings as-is, the rest as JSON text."""
    parts = content_parts(result)
    if parts is not None:
        return parts
    return tool_output_text(result)


def tool_output_text(result: object) -> str:
    """A tool's return value as text: strings as-is, the rest as JSON."""
    if isinstance(result, str):
        return result
    if isinstance(result, pydantic.BaseModel):
        return result.model_dump_json()
    return orjson.dumps(result, default=str).decode()


def _validation_summary(error: pydantic.ValidationError) -> str:
    parts = []
    for issue in error.errors():
        location = ".".join(str(p) for p in issue["loc"]) or "arguments"
        parts.append(f"field '{location}': {issue['msg']}")
    return "; ".join(parts)

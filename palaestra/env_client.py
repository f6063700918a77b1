"""How an agent reaches an environment: the ``EnvironmentClient`` interface.

The agent never touches an ``Environment`` directly; it talks to a client. The in-process
client below calls the environment's methods with no HTTP hop; a remote client speaks the
NeMo Gym resources-server protocol. An agent cannot tell them apart.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import orjson
import pydantic

from palaestra.environment import Environment
from palaestra.errors import (
    EnvironmentFailure,
    RolloutFailure,
    ToolCallRejected,
    ToolError,
    ToolFailure,
    VerifierFailure,
)
from palaestra.sessions import Session, SessionStore
from palaestra.step_env import StepEnvironment, StepResult
from palaestra.tools import ToolSpec
from palaestra.types import FailureKind, JsonDict, Verdict

if TYPE_CHECKING:
    from palaestra.sandbox.pool import WorkerPool

T = TypeVar("T")


@runtime_checkable
class EnvironmentClient(Protocol):
    """The environment as an agent sees it: sessions, tool calls and verification."""

    name: str

    def tools(self) -> list[JsonDict]: ...

    async def seed(self, task: JsonDict) -> str:
        """Start a session for ``task``; return its id."""
        ...

    async def call_tool(self, session_id: str, name: str, arguments: JsonDict) -> str:
        """Run a tool; return its output as the text the model will read.

        Raises ``ToolCallRejected`` when the call is the model's mistake, ``ToolFailure``
        when the tool itself broke.
        """
        ...

    async def verify(self, session_id: str, task: JsonDict, response: JsonDict) -> Verdict: ...

    async def close(self, session_id: str) -> None: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class StepEnvironmentClient(EnvironmentClient, Protocol):
    """An environment client that also speaks the turn-based reset/step protocol."""

    async def reset(self, session_id: str) -> str: ...

    async def step(self, session_id: str, action: str) -> StepResult: ...


class LocalEnvironmentClient:
    """Runs an ``Environment`` in this process: direct method calls, no serialisation."""

    def __init__(self, environment: Environment) -> None:
        self.environment = environment
        self.name = environment.name
        self.sessions = SessionStore(environment.session_ttl)
        self._tools = environment.tools()
        self._pool: WorkerPool | None = None
        environment._worker_pool = self._worker_pool

    def tools(self) -> list[JsonDict]:
        return self._tools

    async def seed(self, task: JsonDict) -> str:
        for expired in self.sessions.sweep():
            await self._close_quietly(expired)
        try:
            state = await _call(self.environment.seed, task)
        except Exception as error:
            raise EnvironmentFailure(f"seed raised {_describe(error)}") from error
        return self.sessions.open(task, state).id

    async def call_tool(self, session_id: str, name: str, arguments: JsonDict) -> str:
        return tool_output_text(await self.call_tool_value(session_id, name, arguments))

    async def call_tool_value(self, session_id: str, name: str, arguments: JsonDict) -> object:
        """Run a tool and return what it returned (the HTTP server sends it as JSON)."""
        spec = self.environment.tool_specs.get(name)
        if spec is None:
            known = ", ".join(self.environment.tool_specs) or "none"
            raise ToolCallRejected(f"unknown tool '{name}'; available tools: {known}")
        try:
            parsed = spec.arguments.model_validate(arguments)
        except pydantic.ValidationError as error:
            raise ToolCallRejected(
                f"invalid arguments for tool '{name}': {_validation_summary(error)}"
            ) from error
        session = self.sessions.get(session_id)
        kwargs = dict(parsed)
        if spec.wants_session:
            kwargs["session"] = session
        try:
            result = await _run_tool(spec, self.environment, kwargs)
        except ToolError as error:
            raise ToolCallRejected(str(error)) from error
        except RolloutFailure:  # the pool or sandbox already said what failed
            raise
        except TimeoutError as error:
            raise ToolFailure(
                f"tool '{name}' timed out after {self.environment.tool_timeout:g}s"
            ) from error
        except Exception as error:
            raise ToolFailure(f"tool '{name}' raised {_describe(error)}") from error
        return result

    async def verify(self, session_id: str, task: JsonDict, response: JsonDict) -> Verdict:
        session = self.sessions.get(session_id)
        try:
            result = await _within(
                self.environment.verify_timeout, self.environment.verify, session, response
            )
        except TimeoutError as error:
            raise VerifierFailure(
                f"verify timed out after {self.environment.verify_timeout:g}s"
            ) from error
        except RolloutFailure:  # the pool or sandbox already said what failed
            raise
        except Exception as error:
            raise VerifierFailure(f"verify raised {_describe(error)}") from error
        return as_verdict(result)

    async def reset(self, session_id: str) -> str:
        """Start a turn-based episode (``StepEnvironment``); return the first observation."""
        environment = self._step_environment()
        session = self.sessions.get(session_id)
        try:
            return str(await _call(environment.reset, session))
        except Exception as error:
            raise EnvironmentFailure(f"reset raised {_describe(error)}") from error

    async def step(self, session_id: str, action: str) -> StepResult:
        """Apply the model's action; the step's reward is recorded in the session."""
        environment = self._step_environment()
        session = self.sessions.get(session_id)
        try:
            result = await _within(self.environment.tool_timeout, environment.step, session, action)
        except TimeoutError as error:
            raise EnvironmentFailure(
                f"step timed out after {self.environment.tool_timeout:g}s"
            ) from error
        except RolloutFailure:  # the pool or sandbox already said what failed
            raise
        except Exception as error:
            raise EnvironmentFailure(f"step raised {_describe(error)}") from error
        session.step_rewards.append(float(result.reward))
        return result

    def _step_environment(self) -> StepEnvironment:
        if not isinstance(self.environment, StepEnvironment):
            raise EnvironmentFailure(
                f"environment '{self.name}' has no reset/step: use a tool-calling agent"
            )
        return self.environment

    async def close(self, session_id: str) -> None:
        session = self.sessions.pop(session_id)
        if session is not None:
            try:
                await _call(self.environment.close, session)
            except Exception as error:
                raise EnvironmentFailure(f"close raised {_describe(error)}") from error

    async def aclose(self) -> None:
        for session in self.sessions.drain():
            await self._close_quietly(session)
        try:
            await self.environment.aclose()
        finally:
            if self._pool is not None:
                pool, self._pool = self._pool, None
                await pool.aclose()

    def _worker_pool(self) -> WorkerPool:
        """The environment's warm worker pool (``run_in_pool``): created on first use only."""
        if self._pool is None:
            from palaestra.sandbox.pool import WorkerPool

            self._pool = WorkerPool(self.environment.pool_workers)
        return self._pool

    async def _close_quietly(self, session: Session) -> None:
        # An expired session's close failing must not fail an unrelated rollout.
        with contextlib.suppress(Exception):
            await _call(self.environment.close, session)


def as_verdict(result: object) -> Verdict:
    """Accept what ``verify`` may return: a Verdict, a number or a bool."""
    if isinstance(result, Verdict):
        return result
    if isinstance(result, bool | int | float):
        return Verdict(reward=float(result))
    return Verdict.failed(
        FailureKind.VERIFIER_ERROR,
        f"verify returned {type(result).__name__}, expected Verdict or float",
    )


def tool_output_text(result: object) -> str:
    """A tool's return value as the text the model reads: strings as-is, the rest as JSON."""
    if isinstance(result, str):
        return result
    if isinstance(result, pydantic.BaseModel):
        return result.model_dump_json()
    return orjson.dumps(result, default=str).decode()


async def _call(function: Callable[..., T | Awaitable[T]], *args: Any) -> T:
    result = function(*args)
    if inspect.isawaitable(result):
        return await result
    return result


async def _within(seconds: float, function: Callable[..., T | Awaitable[T]], *args: Any) -> T:
    """Call ``function``; if it answers an awaitable, wait at most ``seconds`` for it.

    A synchronous function runs to its end whatever the limit (nothing can interrupt it on
    the event loop), so it is called directly: ``asyncio.wait_for`` would wrap each call in a
    task of its own, a large part of a trivial rollout's cost.
    """
    result = function(*args)
    if not inspect.isawaitable(result):
        return result
    async with asyncio.timeout(seconds):
        return await result


async def _run_tool(spec: ToolSpec, environment: Environment, kwargs: JsonDict) -> object:
    """Run a tool within its environment's ``tool_timeout`` (a synchronous one: see ``_within``)."""
    if spec.blocking:
        async with asyncio.timeout(environment.tool_timeout):
            return await asyncio.to_thread(spec.function, environment, **kwargs)
    result = spec.function(environment, **kwargs)
    if not spec.is_async:
        return result
    async with asyncio.timeout(environment.tool_timeout):
        return await result


def _validation_summary(error: pydantic.ValidationError) -> str:
    parts = []
    for issue in error.errors():
        location = ".".join(str(p) for p in issue["loc"]) or "arguments"
        parts.append(f"field '{location}': {issue['msg']}")
    return "; ".join(parts)


def _describe(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__

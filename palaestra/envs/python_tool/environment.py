"""python_tool: math problems solved with a stateful, sandboxed Python tool; reward on \\boxed{}.

The answer is checked exactly as the ``math`` environment checks it (this class extends it:
the last ``\\boxed{}``, math-verify in the worker pool, the optional judge). The tool,
``execute_python``, runs each call as a cell of one sandboxed Python session per rollout
(``palaestra.sandbox.PythonSession``): variables persist across calls, the session starts on
the first call and is killed in ``close``. What the model's code runs into (an error, a
limit) is told to the model as the tool's output; a sandbox that cannot start is a
``tool_error`` failure of the rollout, never a reward of 0.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import ClassVar

from palaestra import ConfigError, JsonDict, Model, Session, ToolFailure, Verdict, tool
from palaestra.envs._shared.boxed_math import DEFAULT_MIXTURE, BoxedMath
from palaestra.sandbox import (
    DEBIAN_PYTHON,
    CellResult,
    Isolation,
    Limits,
    PythonSession,
    Sandbox,
    SessionClosed,
)

SYSTEM_PROMPT = (
    "Solve the problem. You can run Python code with the execute_python tool: variables and "
    "imports persist between calls, and it returns what the code printed and the value of its "
    "last line. Then write the final answer, and only the final answer, inside \\boxed{}."
)


@dataclass(slots=True)
class ToolState:
    """One rollout's Python session (started on the first call) and what its calls ran into."""

    python: PythonSession | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    calls: int = 0
    errors: int = 0
    restarts: int = 0
    limits: list[str] = field(default_factory=list)
    closed: bool = False


class PythonTool(BoxedMath):
    """Math with a stateful Python tool in the sandbox; reward on the final \\boxed{} answer."""

    name = "python_tool"
    system_prompt: ClassVar[str] = SYSTEM_PROMPT
    """Math's prompt, plus how to use ``execute_python``."""
    datasets: ClassVar[dict[str, float]] = {**DEFAULT_MIXTURE, "count_primes": 2.0}
    limits: ClassVar[Limits] = Limits(
        wall_time=10,
        cpu_time=60,
        memory_mb=1024,
        processes=32,
        file_size_mb=16,
        open_files=64,
        output_bytes=100_000,
    )
    """Session limits: ``wall_time`` bounds each call; CPU, memory, processes the session."""
    output_chars: ClassVar[int] = 4000
    """The most characters of one call's output the model reads (head and tail kept)."""
    idle_ttl: ClassVar[float] = 600.0
    """A session idle this long ends by itself (``close`` normally ends it first)."""
    start_retry_delay: ClassVar[float] = 2.5
    isolation: ClassVar[Isolation] = "bubblewrap"
    python: ClassVar[str] = DEBIAN_PYTHON
    tool_timeout: ClassVar[float] = 60.0

    def __init__(self, judge: Model | str | None = None, sandbox: Sandbox | None = None) -> None:
        super().__init__(judge)
        self.sandbox = sandbox or Sandbox(self.limits, python=self.python, isolation=self.isolation)

    def seed(self, task: JsonDict) -> ToolState:
        return ToolState()

    @tool
    async def execute_python(self, session: Session, code: str) -> str:
        """Run Python code in a persistent session; returns its printed output and last value.

        Args:
            code: Python source to run, for example "x = 2**10\\nprint(x * 3)".
        """
        state: ToolState = session.state
        async with state.lock:
            state.calls += 1
            python = state.python or await self._start(state)
            note = ""
            try:
                try:
                    cell = await python.run(code)
                except SessionClosed:  # it expired or died since the last call: start anew
                    state.python = None
                    state.restarts += 1
                    cell = await (await self._start(state)).run(code)
                    note = "[the earlier Python session had ended: this ran in a new one]\n"
            except BaseException:  # e.g. cancelled mid-cell: the session cannot be trusted
                await self._drop(state)
                raise
            state.errors += cell.error is not None
            if cell.limit is not None:
                state.limits.append(str(cell.limit))
            text = note + cell_text(cell, self.output_chars)
            if state.python is not None and not state.python.alive:
                await self._drop(state)
                state.restarts += 1
                text += "\n[the Python session ended: its variables are gone]"
            return text

    async def verify(self, session: Session, response: JsonDict) -> Verdict:
        verdict = await super().verify(session, response)
        state = session.state
        if verdict.failure is None and isinstance(state, ToolState):
            verdict.metrics.update(
                tool_calls=state.calls,
                tool_errors=state.errors,
                python_restarts=state.restarts,
                limit_hit=",".join(dict.fromkeys(state.limits)),
            )
        return verdict

    async def close(self, session: Session) -> None:  # type: ignore[override]
        state = session.state
        if isinstance(state, ToolState):
            state.closed = True
            await self._drop(state)

    async def _start(self, state: ToolState) -> PythonSession:
        """Start the rollout's session; a second failure to start is a ``tool_error``."""
        for attempt in range(2):
            try:
                python = await self.sandbox.session(limits=self.limits, idle_ttl=self.idle_ttl)
            except (ConfigError, SessionClosed, OSError, RuntimeError, TimeoutError) as error:
                if attempt == 1 or isinstance(error, ConfigError):
                    raise ToolFailure(f"the Python sandbox cannot start: {error}") from error
                await asyncio.sleep(self.start_retry_delay)
                continue
            if state.closed:  # the rollout was closed while this session started
                await python.close()
                raise ToolFailure("the rollout was closed during the call")
            state.python = python
            return python
        raise AssertionError("unreachable")

    async def _drop(self, state: ToolState) -> None:
        python, state.python = state.python, None
        if python is not None:
            with contextlib.suppress(Exception):
                await python.close()


def cell_text(cell: CellResult, limit: int) -> str:
    """What the model reads: output, then the error or the last value, then any limit hit."""
    parts = [cell.stdout.rstrip("\n")] if cell.stdout else []
    if cell.stderr:
        parts.append("[stderr]\n" + cell.stderr.rstrip("\n"))
    if cell.error is not None:
        parts.append("[error]\n" + cell.error.rstrip("\n"))
    elif cell.value is not None:
        parts.append(cell.value)
    if cell.limit is not None:
        parts.append(f"[limit hit: {cell.limit}]")
    return shorten("\n".join(parts) if parts else "(no output)", limit)


def shorten(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, keeping its head and its tail."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - head - tail} characters cut ...]\n{text[-tail:]}"

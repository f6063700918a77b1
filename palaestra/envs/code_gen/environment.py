"""code_gen: write a Python function or program; reward 1 when every unit test passes.

The answer's code (the last ```python block, else the raw text) runs in the sandbox
(``palaestra.sandbox``: bubblewrap, no network, read-only system, CPU/memory/process limits).
What the code does there — loop forever, fork, allocate, write files, open sockets — is the
answer's failure: the tests it did not pass count as failed and ``limit_hit`` names the limit.
A sandbox that cannot run at all is an infrastructure failure: a ``verifier_error`` record,
never a reward of 0.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from typing import Any, ClassVar

from palaestra import (
    ConfigError,
    Environment,
    FailureKind,
    JsonDict,
    Session,
    Verdict,
    output_text,
)
from palaestra.envs.code_gen.data import generate
from palaestra.envs.code_gen.extract import extract_code
from palaestra.envs.code_gen.runner import InvalidTests, SandboxBroken, run_tests, test_spec
from palaestra.sandbox import DEBIAN_PYTHON, Isolation, Limits, Sandbox


class CodeGen(Environment):
    """Write a Python function or program; reward when all its unit tests pass in the sandbox."""

    name = "code_gen"
    default_agent = "single_turn"
    limits: ClassVar[Limits] = Limits(
        wall_time=10, cpu_time=10, memory_mb=1024, processes=32, file_size_mb=16, open_files=64
    )
    """Limits of one sandboxed run (all function tests, or one io case); ``time_limit`` in a
    task sets its wall and CPU time."""
    io_budget: ClassVar[float] = 60.0
    """Seconds all io cases of one answer may take together; the rest then count as failed."""
    isolation: ClassVar[Isolation] = "bubblewrap"
    """``"bubblewrap"``: no bubblewrap, no score. ``"auto"`` would fall back to rlimits only,
    which is not a security boundary: only for code you trust."""
    python: ClassVar[str] = DEBIAN_PYTHON
    max_parallel_runs: ClassVar[int | None] = None
    """Sandboxed runs at once (``None``: one per core), so that wall time means something."""
    verify_timeout: ClassVar[float] = 600.0

    def __init__(self, sandbox: Sandbox | None = None) -> None:
        self.sandbox = sandbox or Sandbox(self.limits, python=self.python, isolation=self.isolation)
        self._sandbox_works = False
        self._slots: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None

    async def verify(self, session: Session, response: JsonDict) -> Verdict:
        try:
            spec = test_spec(session.task)
        except InvalidTests as error:
            return Verdict.failed(FailureKind.INVALID_INPUT, str(error))
        code = extract_code(output_text(response), spec.entry_point or None)
        metrics: dict[str, Any] = {
            "code_found": code is not None,
            "test_kind": spec.kind,
            "tests_passed": 0,
            "tests_total": spec.total,
            "limit_hit": "",
            "error": "",
        }
        if code is None:
            return Verdict(reward=0.0, metrics={**metrics, "error": "no code in the answer"})
        problem = await self._sandbox_problem()
        if problem is not None:
            return Verdict.failed(FailureKind.VERIFIER_ERROR, problem)
        try:
            async with self._parallel_runs():
                outcome = await run_tests(self.sandbox, spec, code, self.limits, self.io_budget)
        except InvalidTests as error:
            return Verdict.failed(FailureKind.INVALID_INPUT, str(error))
        except (SandboxBroken, ConfigError, OSError, RuntimeError) as error:
            return Verdict.failed(FailureKind.VERIFIER_ERROR, f"the sandbox failed: {error}")
        metrics.update(
            tests_passed=outcome.passed,
            limit_hit=str(outcome.limit or ""),
            error=outcome.error,
        )
        return Verdict(reward=float(outcome.passed == outcome.total > 0), metrics=metrics)

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        """``count`` distinct HumanEval problems (at most 164), in an order drawn from ``seed``."""
        return generate(count, seed)

    async def _sandbox_problem(self) -> str | None:
        """Why the sandbox cannot run a known-good program, or ``None`` (checked until it can)."""
        if self._sandbox_works:
            return None
        try:
            await asyncio.to_thread(lambda: self.sandbox.isolation)  # a blocking trial run
            result = await self.sandbox.run_python("print('ready')", limits=Limits(wall_time=30))
        except (ConfigError, OSError, RuntimeError) as error:
            return f"the sandbox is unavailable: {error}"
        if not result.ok or result.stdout != "ready\n":
            tail = result.stderr.strip()[-300:]
            return f"the sandbox cannot run a trivial program (exit {result.exit_code}): {tail}"
        self._sandbox_works = True
        return None

    def _parallel_runs(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._slots is None or self._slots[0] is not loop:
            self._slots = (loop, asyncio.Semaphore(self.max_parallel_runs or os.cpu_count() or 1))
        return self._slots[1]

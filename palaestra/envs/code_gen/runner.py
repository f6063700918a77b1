"""Running an answer's tests in the sandbox and counting what passed.

Three kinds of tests, chosen by the task's fields (see the README):

- ``check``: ``check_code`` defines ``check(candidate)`` (HumanEval); each of its statements
  that asserts something is one test. Runs in one sandboxed process (``harness.py``).
- ``calls``: ``tests`` of ``{"args": [...], "kwargs": {...}, "expected": ...}`` for the
  function ``entry_point``; the values are returned to the host and compared here, so the
  answer never sees the expected values. One sandboxed process.
- ``io``: ``tests`` of ``{"stdin": "...", "stdout": "..."}``; the answer is a program, run
  once per case in a fresh sandbox and compared line by line (trailing spaces ignored).
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from palaestra import InvalidTask, JsonDict
from palaestra.envs.code_gen.harness import test_statements
from palaestra.sandbox import Limit, Limits, Sandbox, SandboxResult, limit_from_error

HARNESS = Path(__file__).with_name("harness.py").read_text()
_IO_LAUNCHER = (  # marks the start on stderr, then becomes the answer's program
    "import os, sys\n"
    "os.write(2, sys.argv[1].encode() + b'\\n')\n"
    "os.execv(sys.executable, [sys.executable, '-B', '-E', '-s', 'main.py'])\n"
)
RETRY_DELAY = 2.5
"""Seconds before the one retry of a run that did not start."""
Kind = Literal["check", "calls", "io"]


class InvalidTests(InvalidTask):
    """The task's tests are missing or broken: the rollout cannot be scored."""


class SandboxBroken(RuntimeError):
    """The sandbox did not run our own harness: an infrastructure failure, not a score."""


@dataclass(frozen=True, slots=True)
class TestSpec:
    kind: Kind
    total: int
    entry_point: str = ""
    prefix: str = ""
    check: str = ""
    calls: list[JsonDict] = field(default_factory=list)
    expected: list[Any] = field(default_factory=list)
    io: list[tuple[str, str]] = field(default_factory=list)
    time_limit: float | None = None


@dataclass(slots=True)
class Outcome:
    passed: int
    total: int
    limit: Limit | None = None
    error: str = ""


def test_spec(task: JsonDict) -> TestSpec:
    """The tests a task declares; ``InvalidTests`` naming the field when they are unusable."""
    limit = task.get("time_limit")
    if limit is not None and not (_is_number(limit) and 0 < limit <= 120):
        raise InvalidTests("'time_limit' must be a number of seconds in (0, 120]")
    entry = task.get("entry_point", "")
    prefix = task.get("prefix_code", "")
    if not isinstance(entry, str) or not isinstance(prefix, str):
        raise InvalidTests("'entry_point' and 'prefix_code' must be strings")
    if "check_code" in task:
        check = task["check_code"]
        if not isinstance(check, str) or not entry.isidentifier():
            raise InvalidTests("'check_code' needs a string and 'entry_point' a function name")
        try:
            total = len(test_statements(check)) or 1
        except (SyntaxError, ValueError) as error:
            raise InvalidTests(f"'check_code': {error}") from None
        return TestSpec("check", total, entry, prefix, check, time_limit=limit)
    tests = task.get("tests")
    if not isinstance(tests, list) or not tests or not all(isinstance(t, dict) for t in tests):
        raise InvalidTests("the task needs 'check_code' or a non-empty list 'tests' of objects")
    if all(isinstance(t.get("stdin", ""), str) and isinstance(t.get("stdout"), str) for t in tests):
        cases = [(str(t.get("stdin", "")), str(t["stdout"])) for t in tests]
        return TestSpec("io", len(cases), io=cases, time_limit=limit)
    if not entry.isidentifier():
        raise InvalidTests("function tests need 'entry_point', the function's name")
    calls: list[JsonDict] = []
    for number, test in enumerate(tests):
        args, kwargs = test.get("args", []), test.get("kwargs", {})
        if not isinstance(args, list) or not isinstance(kwargs, dict) or "expected" not in test:
            raise InvalidTests(
                f"'tests'[{number}]: needs 'stdin'/'stdout' strings, or 'args' (a list), "
                "'kwargs' (an object) and 'expected'"
            )
        calls.append({"args": args, "kwargs": kwargs})
    expected = [t["expected"] for t in tests]
    return TestSpec(
        "calls", len(calls), entry, prefix, calls=calls, expected=expected, time_limit=limit
    )


async def run_tests(
    sandbox: Sandbox, spec: TestSpec, code: str, limits: Limits, budget: float
) -> Outcome:
    """Run ``code`` against ``spec`` (``budget``: seconds for all io cases together)."""
    if spec.time_limit is not None:
        limits = limits.replace(wall_time=spec.time_limit, cpu_time=spec.time_limit)
    if spec.kind == "io":
        return await _run_io(sandbox, spec, code, limits, budget)
    return await _run_function(sandbox, spec, code, limits)


async def _run_function(sandbox: Sandbox, spec: TestSpec, code: str, limits: Limits) -> Outcome:
    nonce = secrets.token_hex(16)
    request: JsonDict = {
        "nonce": nonce,
        "code": code,
        "prefix": spec.prefix,
        "entry_point": spec.entry_point,
    }
    if spec.kind == "check":
        request["check"] = spec.check
    else:
        request["calls"] = spec.calls
    command = [sandbox.python, "-B", "-E", "-s", "-c", HARNESS]
    result = await _launch(
        sandbox,
        command,
        stdin=json.dumps(request),
        limits=limits,
        started=lambda r: any(e.get("started") for e in _events(r.stdout, nonce)),
    )
    events = _events(result.stdout, nonce)
    for event in events:
        if "task_error" in event:
            raise InvalidTests(f"the task's own code failed: {event['task_error']}")
    outcome = Outcome(0, spec.total, result.limit)
    errors = [str(e["answer_error"]) for e in events if "answer_error" in e]
    passed: set[int] = set()
    failed: set[int] = set()
    for event in events:
        number = event.get("t")
        if not isinstance(number, int) or not 0 <= number < spec.total:
            continue
        if spec.kind == "check":
            right = event.get("ok") is True
        else:
            right = "value" in event and same_value(event["value"], spec.expected[number])
        (passed if right else failed).add(number)
        if not right:
            errors.append(str(event.get("e") or "wrong value"))
    errors += [f"the check stopped: {e['aborted']}" for e in events if "aborted" in e]
    outcome.passed = len(passed - failed)
    if not any(e.get("done") for e in events) and not errors:
        errors.append(f"the run ended before every test ran: {_ending(result)}")
    outcome.error = errors[0][:300] if errors else ""
    if outcome.limit is None and outcome.error:
        outcome.limit = limit_from_error(outcome.error)
    return outcome


async def _run_io(
    sandbox: Sandbox, spec: TestSpec, code: str, limits: Limits, budget: float
) -> Outcome:
    outcome = Outcome(0, spec.total)
    deadline = time.monotonic() + budget
    for stdin, expected in spec.io:
        if time.monotonic() > deadline:
            outcome.limit = outcome.limit or Limit.WALL_TIME
            outcome.error = outcome.error or f"the {budget:g} s budget for all cases was spent"
            break
        marker = secrets.token_hex(16)
        result = await _launch(
            sandbox,
            [sandbox.python, "-B", "-E", "-s", "-c", _IO_LAUNCHER, marker],
            files={"main.py": code.encode(errors="surrogatepass")},  # bytes the model wrote
            stdin=stdin,
            limits=limits,
            started=functools.partial(_marked, marker),
        )
        if result.ok and same_output(result.stdout, expected):
            outcome.passed += 1
            continue
        outcome.limit = outcome.limit or result.limit
        stderr = result.stderr.split("\n", 1)[1]
        outcome.error = (
            outcome.error or ("wrong output" if result.ok else _ending(result, stderr))[:300]
        )
        if result.limit in (Limit.WALL_TIME, Limit.CPU_TIME):
            break  # the next cases would most likely spend the same time for nothing
    return outcome


async def _launch(
    sandbox: Sandbox,
    command: list[str],
    *,
    stdin: str,
    limits: Limits,
    started: Callable[[SandboxResult], bool],
    files: dict[str, str | bytes] | None = None,
) -> SandboxResult:
    """Run ``command``; if our own start-up mark is missing, wait and try once more.

    Start-up can fail for reasons that pass (a burst of runs whose exited processes the
    machine's init has not reaped yet still count against the run uid's process limit); a
    second failure is ``SandboxBroken``: an infrastructure failure, never the answer's.
    """
    for attempt in range(2):
        result = await sandbox.run(command, files=files, stdin=stdin, limits=limits)
        if started(result):
            return result
        if attempt == 0:
            await asyncio.sleep(RETRY_DELAY)
    raise SandboxBroken(f"the sandbox did not start the code: {_ending(result)}")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _marked(marker: str, result: SandboxResult) -> bool:
    return result.stderr.startswith(marker + "\n")


def _events(stdout: str, nonce: str) -> list[JsonDict]:
    events: list[JsonDict] = []
    for line in stdout.splitlines():
        if nonce not in line:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("n") == nonce:
            events.append(event)
    return events


def _ending(result: SandboxResult, stderr: str | None = None) -> str:
    if result.limit is not None:
        return f"hit the {result.limit} limit"
    if result.signal is not None:
        return f"killed by signal {result.signal}"
    tail = (result.stderr if stderr is None else stderr).strip().splitlines()[-1:] or [""]
    return f"exit status {result.exit_code}" + (f": {tail[0]}" if tail[0] else "")


def same_output(got: str, expected: str) -> bool:
    """Equal line by line, ignoring trailing spaces and trailing blank lines."""

    def lines(text: str) -> list[str]:
        rows = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
        while rows and not rows[-1]:
            rows.pop()
        return rows

    return lines(got) == lines(expected)


def same_value(got: Any, expected: Any) -> bool:
    """JSON values equal; floats within 1e-9 (relative or absolute); a bool is not a number."""
    if isinstance(got, bool) or isinstance(expected, bool):
        return type(got) is type(expected) and got == expected
    if isinstance(got, int | float) and isinstance(expected, int | float):
        if isinstance(got, int) and isinstance(expected, int):
            return got == expected
        return math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(got, list) and isinstance(expected, list):
        return len(got) == len(expected) and all(map(same_value, got, expected))
    if isinstance(got, dict) and isinstance(expected, dict):
        return got.keys() == expected.keys() and all(same_value(got[k], expected[k]) for k in got)
    return type(got) is type(expected) and bool(got == expected)

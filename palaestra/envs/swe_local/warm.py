"""The generator's first run of a mutation in a warm pytest (``warm_box.py``), and which
tests it needs.

A fresh pytest pays for its start, the package's import and the file's collection on every
run: on this machine most of a short test file's run. The warm pytest pays them once per test
file, then forks a child per mutation that takes the mutated functions' new code and runs
only the tests that call a mutated function (by the probe's call data of the gold run; a test
in a class with its class, whose setup runs inside its first test). A test that calls none of
them runs no changed code, so it keeps its gold outcome. This run only chooses what to
confirm: a kept mutation is still run in fresh processes as the verifier runs its ids (every
FAIL_TO_PASS fails and every PASS_TO_PASS passes), so a test the selection missed, or a swap
that differs from a fresh import, costs a rejection, never a wrong task.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from palaestra.envs.swe_local.flags import scope
from palaestra.envs.swe_local.mutations import Mutation
from palaestra.envs.swe_local.validate import Runner, RunResult, read_result

SERVER = Path(__file__).with_name("warm_box.py")
START_SECONDS = 120.0
"""The longest a warm pytest may take to collect its file."""
SLACK_SECONDS = 30.0
"""Beyond a request's own time limit (which the box enforces), how long to wait for its reply."""


class Warm:
    """A warm pytest over ``test_file`` of ``runner``'s working copy, or a failed start
    (``started`` false: the caller runs every mutation cold)."""

    def __init__(self, runner: Runner, test_file: str) -> None:
        self.runner = runner
        self.out = Path(tempfile.mkdtemp(prefix="swe-warm-"))
        shutil.copy(SERVER, self.out / "_swe_warm.py")
        inside = runner.inside(self.out)
        command, env = runner.boxed(
            ["/usr/bin/python3", f"{inside}/_swe_warm.py", test_file, runner.inside(None)],
            self.out,
            {"SWE_PROBE_OUT": f"{inside}/collected.json"},
        )
        self.requests = 0
        self.process: subprocess.Popen[str] | None = subprocess.Popen(
            command,
            cwd=runner.work,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        first = self._reply(START_SECONDS)
        self.started = bool(first and first.get("started"))
        if not self.started:
            self.close()

    def _reply(self, timeout: float) -> dict[str, Any] | None:
        if self.process is None:
            return None
        stdout: IO[str] | None = self.process.stdout
        assert stdout is not None
        ready, _, _ = select.select([stdout], [], [], timeout)
        line = stdout.readline() if ready else ""
        if not line:
            self.close()
            return None
        reply: dict[str, Any] = json.loads(line)
        return reply

    def run(
        self, module: str, swaps: list[list[Any]], targets: list[str], timeout: float
    ) -> RunResult | str | None:
        """Run ``targets`` with ``swaps`` made in ``module`` (written mutated on disk): the
        report, None on a timeout, or why to run this mutation cold instead."""
        if self.process is None or self.process.stdin is None:
            return "no warm pytest"
        self.requests += 1
        report = self.out / f"r{self.requests}.json"
        request = {
            "module": module,
            "swap": swaps,
            "targets": targets,
            "out": f"{self.runner.inside(self.out)}/{report.name}",
            "timeout": timeout,
        }
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        except OSError:
            self.close()
            return "the warm pytest stopped"
        reply = self._reply(timeout + SLACK_SECONDS)
        if reply is None:
            return "the warm pytest stopped"
        if "cold" in reply:
            return str(reply["cold"])
        if reply.get("timeout"):
            return None
        if not report.is_file():
            return "no report"
        result = read_result(report)
        report.unlink()
        if any(node not in result.outcomes for node in targets):
            return "a test has no outcome"
        return result

    def close(self) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            for stream in (self.process.stdin, self.process.stdout):
                if stream is not None:
                    stream.close()
            self.process = None
        shutil.rmtree(self.out, ignore_errors=True)


def selected(covered: dict[str, list[str]], passed: Iterable[str], keys: set[str]) -> list[str]:
    """The tests of ``passed`` that call a function of ``keys`` (``file:firstline``), a test
    in a class with every test of its class (the probe's ``covered`` of the gold run)."""
    scopes = {scope(node) for node, called in covered.items() if keys & set(called)}
    return [node for node in passed if scope(node) in scopes]


@functools.lru_cache(maxsize=8)
def _functions(source: str) -> tuple[tuple[str, int, int, bool], ...]:
    """Every function of ``source``: Python's qualified name, first line (the first
    decorator's), last line, and whether no function encloses it; in source order (kept for
    the last few sources: a module is asked for once per try, a mutated text twice)."""
    found: list[tuple[str, int, int, bool]] = []

    def visit(node: ast.AST, prefix: str, outermost: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                name = f"{prefix}{child.name}"
                found.append((name, first, child.end_lineno or child.lineno, outermost))
                visit(child, f"{name}.<locals>.", False)
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.", outermost)
            else:
                visit(child, prefix, outermost)

    visit(ast.parse(source), "", True)
    return tuple(found)


def swaps(original: str, changed: str, parts: Iterable[Mutation]) -> list[list[Any]] | None:
    """The warm pytest's swaps for ``parts`` (mutations of ``original`` giving ``changed``):
    per mutation the outermost function around it (required) and the functions nested in it
    (those already made); None when the mutation must run cold (a changed default, which the
    module evaluates, or functions added or removed)."""
    before, after = _functions(original), _functions(changed)
    if [f[0] for f in before] != [f[0] for f in after]:
        return None
    entries: dict[int, list[Any]] = {}
    for mutation in parts:
        if mutation.kind == "changed_default":
            return None
        outer = next(
            (
                index
                for index, (_, first, last, outermost) in enumerate(before)
                if outermost and first <= mutation.line <= last
            ),
            None,
        )
        if outer is None:
            return None
        name, _first, last, _ = before[outer]
        for index in range(outer, len(before)):
            inner, inner_first, _, _ = before[index]
            if index > outer and (inner_first > last or not inner.startswith(f"{name}.")):
                break
            entries[index] = [inner, inner_first, after[index][1], index == outer]
    return [entries[index] for index in sorted(entries)]

"""A warm pytest for one test file, run inside the package's machine while generating.

Standard library and pytest only: it is copied next to the run (with ``probe.py``), not
imported by palaestra. Started as ``python3 _swe_warm.py TEST_FILE [TESTBED]``, it collects
the file once (pytest, its plugins, the package, the conftest files and the test module, with
pytest's assertion rewriting, are then imported), indexes the package's functions by their
code, and then serves requests, one JSON line each on its standard input:

``{"module": "pkg/mod.py", "swap": [[qualname, first_line, new_first_line, required], ...],
"targets": [node ids], "out": "/out/r1.json", "timeout": seconds}``

For each it forks a child, which gives every function object of each ``swap`` entry (the
outermost function around a mutation, whose code makes its nested functions at each call,
and those nested functions, for the ones already made) the code of the same function in the
module's text as it is now on disk (the mutation, written there by the generator), and runs
the targets with the probe (``-p _swe_probe``, its report to ``out``). Each child starts
from the same collected, untouched process, so one mutation never sees another's. The reply,
one JSON line on the original standard output, is ``{"ok": true}``, ``{"timeout": true}``,
or ``{"cold": reason}`` when the swap cannot be made (a required function not found, other
closure cells): the caller then runs the file in a fresh process instead (as it does for a
changed default, which is evaluated when the module runs, not by the function's code).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import sys
import time
import types
from typing import Any

import pytest

TESTBED = "/testbed"
"""The working copy as the machine sees it (the second argument, when given)."""


def _index() -> dict[tuple[str, str, int], list[types.FunctionType]]:
    """Every live function of the package by (file, qualified name, first line)."""
    index: dict[tuple[str, str, int], list[types.FunctionType]] = {}
    for thing in gc.get_objects():
        if isinstance(thing, types.FunctionType):
            code = thing.__code__
            if code.co_filename.startswith(TESTBED + "/"):
                key = (code.co_filename, code.co_qualname, code.co_firstlineno)
                index.setdefault(key, []).append(thing)
    return index


def _codes(code: types.CodeType) -> list[types.CodeType]:
    """``code`` and every code object inside it, in order."""
    found = [code]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found.extend(_codes(const))
    return found


def _swap(
    index: dict[tuple[str, str, int], list[types.FunctionType]],
    module: str,
    swaps: list[list[Any]],
) -> str:
    """Give the live functions of ``swaps`` their code in ``module``'s text on disk; why
    not, or ''."""
    path = f"{TESTBED}/{module}"
    if not any(getattr(m, "__file__", None) == path for m in list(sys.modules.values())):
        return ""  # not imported yet: the child imports the mutated text itself
    with open(path, encoding="utf-8") as file:
        compiled = compile(file.read(), path, "exec", dont_inherit=True)
    new = {(c.co_qualname, c.co_firstlineno): c for c in _codes(compiled)}
    for qualname, first, new_first, required in swaps:
        code = new.get((qualname, new_first))
        live = index.get((path, qualname, first), [])
        if code is None or (required and not live):
            return f"{qualname} not found"
        for function in live:
            try:
                function.__code__ = code
            except ValueError as error:
                return f"{qualname}: {error}"
    return ""


def _args() -> list[str]:
    return ["-q", "-p", "no:cacheprovider", "-p", "_swe_probe", f"--rootdir={TESTBED}"]


def _serve(requests: Any, replies: Any, index: dict[tuple[str, str, int], list[Any]]) -> None:
    for raw in requests:
        request = json.loads(raw)
        child = os.fork()
        if child == 0:
            os.setpgid(0, 0)
            status = 0
            try:
                reason = _swap(index, request["module"], request["swap"])
                if reason:
                    with open(request["out"] + ".cold", "w", encoding="utf-8") as file:
                        file.write(reason)
                else:
                    probe = sys.modules["_swe_probe"]
                    for name in ("_outcomes", "_messages", "_covered", "_test_lines"):
                        getattr(probe, name).clear()
                    probe._collect_errors.clear()
                    probe._OUT = request["out"]  # type: ignore[attr-defined]
                    probe._COVER = ""  # type: ignore[attr-defined]
                    pytest.main([*_args(), "--tb=long", *request["targets"]])
            except BaseException:
                status = 1
            os._exit(status)
        reply = _wait(child, float(request["timeout"]))
        if reply.get("ok") and os.path.exists(request["out"] + ".cold"):
            with open(request["out"] + ".cold", encoding="utf-8") as file:
                reply = {"cold": file.read()}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def _wait(child: int, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        done, _ = os.waitpid(child, os.WNOHANG)
        if done:
            return {"ok": True}
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child, signal.SIGKILL)
            os.waitpid(child, 0)
            return {"timeout": True}
        time.sleep(0.02)


def main() -> None:
    global TESTBED
    if len(sys.argv) > 2:
        TESTBED = sys.argv[2]
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    requests = os.fdopen(os.dup(0), encoding="utf-8")
    quiet = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(quiet, fd)
    status = pytest.main([*_args(), "--co", sys.argv[1]])
    if status != 0:
        replies.write(json.dumps({"started": False, "status": int(status)}) + "\n")
        replies.flush()
        return
    index = _index()
    replies.write(json.dumps({"started": True}) + "\n")
    replies.flush()
    _serve(requests, replies, index)


if __name__ == "__main__":
    main()

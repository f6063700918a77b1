"""A pytest plugin run inside the package's machine while generating (``-p _swe_probe``).

Standard library and pytest only: it is copied next to the run, not imported by palaestra.
It writes, to the JSON file named by ``SWE_PROBE_OUT``:

- ``outcomes``: each test's node id to ``passed``, ``failed``, ``skipped`` or ``error``, and
  ``collect_errors`` (a module that did not import is a broken file, never a failing test);
- ``messages``: for a failed test, the failing statement of the test and the error it raised
  (what a user would paste in a bug report; never frames inside the library);
- with ``SWE_PROBE_COVER`` set to a directory, ``covered``: each test's node id to the
  functions of that package directory it called (``pkg/path.py:firstline``), ``at_import``:
  those called while collecting (a mutation there breaks every test), and ``lines``: per file
  of the package, the lines that some passing test executed (a mutation on a line no passing
  test reaches cannot make one fail).
"""

from __future__ import annotations

import json
import os
import sys
from types import FrameType
from typing import Any

import pytest

_OUT = os.environ.get("SWE_PROBE_OUT", "")
_COVER = os.environ.get("SWE_PROBE_COVER", "")
_ROOT = os.path.dirname(_COVER)
_outcomes: dict[str, str] = {}
_messages: dict[str, str] = {}
_covered: dict[str, list[str]] = {}
_at_import: set[str] = set()
_collect_errors: list[str] = []
_seen: set[str] = set()
_executed: set[tuple[str, int]] = set()
_test_lines: dict[str, set[tuple[str, int]]] = {}


def _trace(frame: FrameType, event: str, arg: Any) -> Any:
    """The global tracer: a call into the package (not its tests) is recorded, and its
    lines are traced; no other frame is."""
    if event == "call":
        code = frame.f_code
        name = code.co_filename
        if name.startswith(_COVER + "/") and code.co_name != "<module>" and not _is_test(name):
            _seen.add(f"{name[len(_ROOT) + 1 :]}:{code.co_firstlineno}")
            return _line
    return None


def _line(frame: FrameType, event: str, arg: Any) -> Any:
    if event == "line":
        _executed.add((frame.f_code.co_filename, frame.f_lineno))
    return _line


def _is_test(path: str) -> bool:
    """A file of the test suite (the verifier's ``is_test_file``): never a place for a bug."""
    *parents, name = path.split("/")
    return (
        name == "conftest.py"
        or name.startswith("test_")
        or name.endswith("_test.py")
        or any(
            p in ("tests", "test", "_test", "testsuite") or p.endswith("_tests") for p in parents
        )
    )


def pytest_collection(session: pytest.Session) -> None:
    if _COVER:
        _seen.clear()
        sys.settrace(_trace)


def pytest_collection_finish(session: pytest.Session) -> None:
    if _COVER:
        sys.settrace(None)
        _at_import.update(_seen)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    if _COVER:
        _seen.clear()
        _executed.clear()
        sys.settrace(_trace)
    yield
    if _COVER:
        sys.settrace(None)
        _covered[item.nodeid] = sorted(_seen)
        _test_lines[item.nodeid] = set(_executed)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _collect_errors.append(report.nodeid)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    previous = _outcomes.get(report.nodeid)
    if report.when == "call":
        outcome = "failed" if report.failed else report.outcome
        if previous != "error":
            _outcomes[report.nodeid] = outcome
        if report.failed:
            _messages[report.nodeid] = _message(report)
    elif report.failed:
        _outcomes[report.nodeid] = "error"
    elif report.skipped and previous is None:
        _outcomes[report.nodeid] = "skipped"


def _message(report: pytest.TestReport) -> str:
    """The test's failing statement and the error, from pytest's report."""
    longrepr: Any = report.longrepr
    statement = ""
    entries = getattr(getattr(longrepr, "reprtraceback", None), "reprentries", None) or []
    if entries:
        lines = getattr(entries[0], "lines", None) or []
        marked = [line[1:].strip() for line in lines if line.startswith(">")]
        statement = marked[-1] if marked else ""
    crash = getattr(longrepr, "reprcrash", None)
    error = getattr(crash, "message", "") if crash is not None else str(longrepr)[-800:]
    return json.dumps({"statement": statement, "error": error[:1500]})


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _OUT:
        return
    lines: dict[str, set[int]] = {}
    for node, executed in _test_lines.items():
        if _outcomes.get(node) == "passed":
            for name, number in executed:
                lines.setdefault(name[len(_ROOT) + 1 :], set()).add(number)
    data = {
        "outcomes": _outcomes,
        "messages": _messages,
        "collect_errors": _collect_errors,
        "covered": _covered,
        "at_import": sorted(_at_import),
        "lines": {name: sorted(numbers) for name, numbers in sorted(lines.items())},
    }
    with open(_OUT, "w", encoding="utf-8") as file:
        json.dump(data, file)

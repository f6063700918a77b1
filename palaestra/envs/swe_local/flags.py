"""A task's difficulty and quality flags, from measurements (never from guesses).

- ``difficulty``: the lines and files the gold patch changes; ``easy`` is one line in one file,
  ``medium`` up to ``MEDIUM_LINES`` lines in one file, ``hard`` anything larger.
- ``leaks_fix``: the statement holds a changed line of the gold patch, or the few tokens around
  its change (``x <= n`` of a fix from ``x < n``): the issue gives the fix away.
- ``duplicate_of``: another task of the same repository and version leaves the same broken
  code (the same base tree): the first of them by id, null for that first one.
- ``slow``: the gold state's run of FAIL_TO_PASS and PASS_TO_PASS took more than
  ``SLOW_SECONDS`` (``test_seconds``).
- ``flaky``: a test id's outcome differed between runs of the same state (three runs of the
  gold state, three of the broken one: ``Observations``).
- ``off_target``: no FAIL_TO_PASS test calls a changed function (the probe's call data of the
  gold run): the failure does not point at the changed code.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

MEDIUM_LINES = 5
SLOW_SECONDS = 30.0
"""Above this, a task's gold test run is ``slow`` (the verifier's budget for the tests is 200 s;
a run this long makes every rollout's check cost more than most agents' turns)."""
LEAK_TOKENS = 3
"""The tokens around a change that, found in the statement, give the fix away."""


def changed(patch: str) -> tuple[list[str], list[str], int]:
    """The removed lines, the added lines and the number of files of a unified diff."""
    removed, added, files = [], [], 0
    for line in patch.splitlines():
        if line.startswith("+++ "):
            files += 1
        elif line.startswith("--- "):
            continue
        elif line.startswith("-"):
            removed.append(line[1:])
        elif line.startswith("+"):
            added.append(line[1:])
    return removed, added, files


def difficulty(patch: str) -> dict[str, Any]:
    """``{lines, files, level}`` of the gold ``patch``."""
    removed, added, files = changed(patch)
    lines = max(len(removed), len(added), 1)
    files = max(files, 1)
    level = (
        "easy" if files == 1 and lines == 1 else "medium" if files == 1 and lines <= MEDIUM_LINES
        else "hard"
    )  # fmt: skip
    return {"lines": lines, "files": files, "level": level}


_TOKEN = re.compile(r"\w+|[^\w\s]+")


def _window(before: str, after: str) -> list[str]:
    """The tokens of ``after`` that differ from ``before``, widened to ``LEAK_TOKENS``."""
    old, new = _TOKEN.findall(before), _TOKEN.findall(after)
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end_new, end_old = len(new), len(old)
    while end_new > start and end_old > start and old[end_old - 1] == new[end_new - 1]:
        end_new, end_old = end_new - 1, end_old - 1
    while end_new - start < LEAK_TOKENS and (start > 0 or end_new < len(new)):
        if start > 0:
            start -= 1
        if end_new - start < LEAK_TOKENS and end_new < len(new):
            end_new += 1
    return new[start:end_new]


def leaks_fix(statement: str, patch: str) -> bool:
    """Whether ``statement`` shows a line the gold ``patch`` adds, or the tokens around one of
    its changes (whitespace aside)."""
    removed, added, _ = changed(patch)
    flat = re.sub(r"\s+", "", statement)
    for line in added:
        code = re.sub(r"\s+", "", line)
        if len(code) >= 8 and code in flat:
            return True
    for before, after in zip(removed, added, strict=False):
        tokens = _window(before, after)
        if len(tokens) >= LEAK_TOKENS and "".join(tokens) in flat:
            return True
    return False


def duplicates(lines: Iterable[MutableMapping[str, Any]]) -> None:
    """Set ``flags.duplicate_of`` of every line: the first id (sorted) with the same repository,
    version and base tree, or None."""
    first: dict[tuple[str, str, str], str] = {}
    ordered = sorted(lines, key=lambda line: str(line["instance_id"]))
    for line in ordered:
        key = (str(line["repo"]), str(line["version"]), str(line["base_tree"]))
        first.setdefault(key, str(line["instance_id"]))
    for line in ordered:
        key = (str(line["repo"]), str(line["version"]), str(line["base_tree"]))
        owner = first[key]
        line["flags"]["duplicate_of"] = None if owner == line["instance_id"] else owner


@dataclass
class Observations:
    """Each test id's outcomes over the runs of one state (gold or broken)."""

    outcomes: dict[str, list[str]] = field(default_factory=dict)

    def add(self, run: Mapping[str, str], ids: Iterable[str]) -> None:
        for node in ids:
            self.outcomes.setdefault(node, []).append(run.get(node, "missing"))

    def disagree(self, ids: Iterable[str]) -> bool:
        """Whether any of ``ids`` had different outcomes in different runs."""
        return any(len(set(self.outcomes.get(node, []))) > 1 for node in ids)


def off_target(
    covered: Mapping[str, Iterable[str]], failing: Iterable[str], targets: set[str]
) -> bool:
    """Whether no test of ``failing`` called any of ``targets`` (``file:firstline`` keys, the
    probe's), from the probe's ``covered`` of the gold run. A test in a class counts what
    every test of its class called: a class's setup runs inside its first test, and the probe
    records it there."""
    scopes = {scope(node) for node in failing}
    return not any(
        targets & set(called) for node, called in covered.items() if scope(node) in scopes
    )


def scope(node: str) -> str:
    """``file::Class`` for a test in a class, else the test's own id."""
    parts = node.split("::")
    return "::".join(parts[:-1]) if len(parts) > 2 else node


def flags(
    line: Mapping[str, Any], *, flaky: bool, off: bool, duplicate_of: str | None = None
) -> dict[str, Any]:
    """The ``flags`` object of ``line`` (its statement, patch and test_seconds) with the
    measured ``flaky`` and ``off``."""
    return {
        "flaky": flaky,
        "slow": float(line["test_seconds"]) > SLOW_SECONDS,
        "duplicate_of": duplicate_of,
        "leaks_fix": leaks_fix(str(line["statement"]), str(line["patch"])),
        "off_target": off,
    }

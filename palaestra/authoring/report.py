"""What ``palaestra test`` finds: one ``Check`` per question a reviewer asks, in a report."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from palaestra.types import JsonDict


class Status(enum.StrEnum):
    """How one check came out. ``skip`` is never a pass: the check could not be made."""

    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"


@dataclass(frozen=True, slots=True)
class Check:
    """One check: its name, how it came out and why (one line)."""

    name: str
    status: Status
    reason: str
    details: JsonDict = field(default_factory=dict)
    """Figures behind the reason (counts, seconds), for ``--json`` and for tests."""

    @classmethod
    def passed(cls, name: str, reason: str, **details: Any) -> Check:
        return cls(name, Status.PASS, reason, details)

    @classmethod
    def failed(cls, name: str, reason: str, **details: Any) -> Check:
        return cls(name, Status.FAIL, reason, details)

    @classmethod
    def skipped(cls, name: str, reason: str, **details: Any) -> Check:
        return cls(name, Status.SKIP, reason, details)

    def to_json(self) -> JsonDict:
        return {
            "name": self.name,
            "status": str(self.status),
            "reason": self.reason,
            "details": self.details,
        }


@dataclass(slots=True)
class EnvironmentReport:
    """Every check made of one environment, in the order they ran."""

    environment: str
    source: str
    """Where the environment came from (``built-in``, the file, the import path)."""
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No check failed (skipped ones do not fail the report)."""
        return all(check.status is not Status.FAIL for check in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [check for check in self.checks if check.status is Status.FAIL]

    def check(self, name: str) -> Check:
        """The check called ``name``; ``KeyError`` when it was not made."""
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(name)

    def to_json(self) -> JsonDict:
        return {
            "environment": self.environment,
            "source": self.source,
            "ok": self.ok,
            "checks": [check.to_json() for check in self.checks],
        }


def counted(count: int, noun: str) -> str:
    """``1 tool``, ``2 tools``: a count and its noun, for the checks' reasons."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"

"""workplace: a multi-step office assistant over mail, calendar, to-dos and a CRM.

Each rollout gets its own SQLite copy of a seeded office. Reward compares end states: the
model's successful state-changing calls and the task's gold calls are each replayed on a fresh
copy of the office, and the two resulting databases must agree.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pydantic

from palaestra import Environment, FailureKind, JsonDict, Session, ToolError, Verdict
from palaestra.envs.workplace.crm import CrmTools
from palaestra.envs.workplace.mail import MailTools
from palaestra.envs.workplace.scenarios import generate
from palaestra.envs.workplace.schedule import CalendarTools
from palaestra.envs.workplace.state import OfficeState, is_write
from palaestra.envs.workplace.store import snapshot


class ReplayError(Exception):
    """A call could not be replayed; ``index`` says which."""

    def __init__(self, index: int, reason: str) -> None:
        super().__init__(f"call {index}: {reason}")


class Workplace(MailTools, CalendarTools, CrmTools, Environment):
    """An office assistant (mail, calendar, to-dos, CRM); reward when the end state is right."""

    name = "workplace"

    def seed(self, task: JsonDict) -> OfficeState:
        return OfficeState.fresh(_office_seed(task))

    def close(self, session: Session) -> None:
        if isinstance(session.state, OfficeState):
            session.state.close()

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]] | None:
        """The task's gold calls, all in its one turn (the request is a single message)."""
        gold = task.get("gold_calls")
        return [list(gold)] if isinstance(gold, list) else None

    def write_tools(self) -> list[str]:
        """The names of the state-changing tools (what verification replays)."""
        return [name for name, spec in self.tool_specs.items() if is_write(spec.function)]

    async def verify(self, session: Session, response: JsonDict) -> Verdict:
        return await asyncio.to_thread(self._verify, session)

    def _verify(self, session: Session) -> Verdict:
        task = session.task
        gold = task.get("gold_calls")
        if not isinstance(gold, list) or not all(isinstance(c, dict) for c in gold):
            return Verdict.failed(FailureKind.INVALID_INPUT, "the task has no 'gold_calls' list")
        made: list[JsonDict] = list(session.state.log)
        try:
            expected = self._replay(task, gold)
        except ReplayError as error:
            return Verdict.failed(FailureKind.INVALID_INPUT, f"a gold call failed: {error}")
        try:
            reached = self._replay(task, made)
        except ReplayError as error:  # it succeeded once on the same state: not deterministic
            return Verdict.failed(FailureKind.VERIFIER_ERROR, f"replay diverged: {error}")
        differing = {
            table: sum(
                ((expected[table] - reached[table]) + (reached[table] - expected[table])).values()
            )
            for table in expected
        }
        wrong = {table: count for table, count in differing.items() if count}
        return Verdict(
            reward=0.0 if wrong else 1.0,
            metrics={
                "scenario": str(task.get("scenario", "")),
                "writes": len(made),
                "gold_writes": len(gold),
                "differing_rows": sum(wrong.values()),
                "differing_tables": ",".join(sorted(wrong)),
            },
        )

    def _replay(self, task: JsonDict, calls: list[JsonDict]) -> dict[str, Counter[tuple[Any, ...]]]:
        """The compared state of a fresh office after ``calls``, in order."""
        state = OfficeState.fresh(_office_seed(task))
        session = Session("replay", task, state)
        writers = set(self.write_tools())
        try:
            for index, call in enumerate(calls):
                name = call.get("name")
                if name not in writers:
                    raise ReplayError(index, f"{name!r} is not a state-changing tool")
                spec = self.tool_specs[str(name)]
                try:
                    arguments = spec.arguments.model_validate(call.get("arguments") or {})
                    spec.function(self, session=session, **dict(arguments))
                except (ToolError, pydantic.ValidationError, sqlite3.Error) as error:
                    raise ReplayError(index, f"{name}: {error}") from None
            return snapshot(state.db)
        finally:
            state.close()

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        """``count`` requests from 18 scenario templates, each over an office made from ``seed``."""
        return generate(count, seed)


def _office_seed(task: JsonDict) -> int:
    seed = task.get("office_seed")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ValueError("the task's 'office_seed' must be an integer")
    return seed

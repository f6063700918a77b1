"""Re-verifying stored rollouts offline: the same trajectories, scored again.

Verifiers are deterministic functions of (task, final state). The final state of a stateful
environment is rebuilt by replaying the trajectory's tool calls in a fresh session, in order;
then ``verify`` scores the stored response. Nothing calls a model.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from palaestra.agents.tool_calling import parse_arguments
from palaestra.collection.files import JsonlAppender
from palaestra.environment.running.client import LocalEnvironmentClient
from palaestra.errors import ConfigError, InputError, RolloutFailure, ToolCallRejected
from palaestra.spec import EnvSpec
from palaestra.types import JsonDict, Verdict, function_calls
from palaestra.wire.jsonl import NOT_JSON, TORN, BadLine, read_rows
from palaestra.wire.rows import ROLLOUT_INDEX, TASK_INDEX

RESULT_FIELDS = frozenset(
    {"response", "reward", "reward_components", "step_rewards", "_palaestra", "failure"}
)


@dataclass(slots=True)
class Change:
    task_index: object
    rollout_index: object
    before: float
    after: float | None
    reason: str = ""


@dataclass(slots=True)
class ReverifySummary:
    rows: int = 0
    unchanged: int = 0
    changes: list[Change] = field(default_factory=list)
    torn_line: int | None = None
    """A last line left half-written (no newline, not JSON), e.g. by a killed run: not scored."""

    @property
    def changed(self) -> int:
        return len(self.changes)


async def reverify_file(
    env: EnvSpec, rollouts: Path, *, output: Path | None = None, replay_tools: bool = True
) -> ReverifySummary:
    """Re-verify ``rollouts`` with the verifier of the environment ``env`` names (built with
    its ``args``, in this process); write the re-scored rows to ``output`` when given.

    A missing rollouts file, or an ``output`` that is the rollouts file, is a one-line
    ``ConfigError`` before anything is written.
    """
    from palaestra.collection.assembly import find

    if not rollouts.is_file():
        raise ConfigError(f"rollouts file not found: {rollouts}")
    if output is not None and output.resolve() == rollouts.resolve():
        raise ConfigError("--output must not be the rollouts file itself")
    found = find(env)
    if found is None:
        raise ConfigError("name the environment whose verifier to use")
    client = LocalEnvironmentClient(found.build())
    if output is not None:
        output.unlink(missing_ok=True)
    try:
        return await reverify(client, rollouts, output=output, replay_tools=replay_tools)
    finally:
        await client.aclose()


async def reverify(
    client: LocalEnvironmentClient,
    rollouts: Path,
    *,
    output: Path | None = None,
    replay_tools: bool = True,
) -> ReverifySummary:
    """Score every row of ``rollouts`` again; optionally write the re-scored rows."""
    summary = ReverifySummary()
    writer = JsonlAppender(output) if output is not None else None
    try:
        for line, row in _rows(rollouts, summary):
            summary.rows += 1
            verdict, reason = await _score(client, row, replay_tools)
            before = float(row.get("reward", 0.0))
            after = None if verdict is None or verdict.failure else float(verdict.reward)
            if after == before:
                summary.unchanged += 1
            else:
                summary.changes.append(
                    Change(
                        row.get(TASK_INDEX, line),
                        row.get(ROLLOUT_INDEX),
                        before,
                        after,
                        reason,
                    )
                )
            if writer is not None:
                writer.append(_rescored(row, verdict, reason, before))
    finally:
        if writer is not None:
            writer.close()
    return summary


async def _score(
    client: LocalEnvironmentClient, row: JsonDict, replay_tools: bool
) -> tuple[Verdict | None, str]:
    task = {k: v for k, v in row.items() if k not in RESULT_FIELDS}
    response = row["response"]
    try:
        session = await client.seed(task)
        try:
            if replay_tools:
                await _replay(client, session, response)
            verdict = await client.verify(session, task, response)
        finally:
            await client.close(session)
    except RolloutFailure as failure:
        return None, f"{failure.kind}: {failure.reason}"
    reason = f"{verdict.failure.kind}: {verdict.failure.reason}" if verdict.failure else ""
    return verdict, reason


async def _replay(client: LocalEnvironmentClient, session: str, response: JsonDict) -> None:
    for call in function_calls(response):
        arguments = parse_arguments(call.get("arguments"))
        if isinstance(arguments, dict):
            # A rejected call was rejected at the time too, and left the state as it was.
            with contextlib.suppress(ToolCallRejected):
                await client.call_tool(session, str(call.get("name", "")), arguments)


def _rescored(row: JsonDict, verdict: Verdict | None, reason: str, before: float) -> JsonDict:
    rescored = {k: v for k, v in row.items() if k not in ("reward_components", "step_rewards")}
    rescored["previous_reward"] = before
    if verdict is None or verdict.failure is not None:
        rescored.pop("reward", None)
        rescored["failure"] = {"kind": reason.split(":")[0], "reason": reason, "masked": True}
        return rescored
    rescored.update(verdict.to_fields())
    return rescored


def _rows(path: Path, summary: ReverifySummary) -> Iterator[tuple[int, JsonDict]]:
    for number, row in read_rows(path):
        if isinstance(row, BadLine) and row.problem == TORN:  # a killed write: verify the rest
            summary.torn_line = number
            return
        if isinstance(row, BadLine) and row.problem == NOT_JSON:
            raise row.error()
        if isinstance(row, BadLine) or not isinstance(row.get("response"), dict):
            raise InputError(
                "a rollout row needs a 'response' object",
                path=str(path),
                line=number,
                field="response",
            )
        yield number, row

"""The rows a run writes: dispatched inputs, finished rollouts and failure records."""

from __future__ import annotations

from palaestra.agents.base import AgentResult
from palaestra.errors import InputError
from palaestra.types import Failure, FailureKind, JsonDict


def dispatch_row(
    task: JsonDict, *, task_index: int, rollout_index: int, agent_ref: JsonDict, overrides: JsonDict
) -> JsonDict:
    """The task as it is sent to the agent: sampling overrides applied, identities added."""
    row = dict(task)
    if overrides:
        row["responses_create_params"] = {**task["responses_create_params"], **overrides}
    row.setdefault("agent_ref", agent_ref)
    row["_ng_task_index"] = task_index
    row["_ng_rollout_index"] = rollout_index
    return row


def rollout_row(dispatched: JsonDict, result: AgentResult, *, attempt: int) -> JsonDict:
    """A scored rollout in NeMo Gym's output form: the verify answer plus identities."""
    assert result.verdict is not None
    row = dict(dispatched)
    row["response"] = result.response
    row.update(result.verdict.to_fields())
    row["_palaestra"] = _run_facts(result, attempt)
    return row


def failure_row(
    dispatched: JsonDict, failure: Failure, result: AgentResult | None, *, attempt: int
) -> JsonDict:
    """A rollout that has no reward; the partial trajectory is kept for debugging."""
    row = dict(dispatched)
    row["failure"] = failure.to_json()
    if result is not None:
        row["response"] = result.response
        row["_palaestra"] = _run_facts(result, attempt)
    else:
        row["_palaestra"] = {"attempt": attempt}
    return row


def input_error_row(error: InputError, *, task_index: int) -> JsonDict:
    """A task line that could not be read; no rollout of it can run."""
    return {
        "_ng_task_index": task_index,
        "_ng_rollout_index": None,
        "failure": Failure(FailureKind.INVALID_INPUT, error.describe()).to_json(),
        "source": {"path": error.path, "line": error.line, "field": error.field},
    }


def _run_facts(result: AgentResult, attempt: int) -> JsonDict:
    return {
        "attempt": attempt,
        "model_calls": result.model_calls,
        "tool_calls": result.tool_calls,
        "timings": {phase: round(seconds, 6) for phase, seconds in result.timings.items()},
    }

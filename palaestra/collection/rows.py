"""The rows a run writes: dispatched inputs, finished rollouts and failure records."""

from __future__ import annotations

import math
import numbers

from palaestra.agents.base import AgentResult
from palaestra.errors import InputError, VerifierFailure
from palaestra.types import Failure, FailureKind, JsonDict, Verdict


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
    """A scored rollout in NeMo Gym's output form: the verify answer plus identities.

    Raises ``VerifierFailure`` when the verdict is not a score (see ``verdict_fields``).
    ``_palaestra.verifier_fields`` names the fields the verifier returned, so the aggregate
    averages those and not the task's own fields (a numeric ``id``).
    """
    assert result.verdict is not None
    fields = verdict_fields(result.verdict)
    row = dict(dispatched)
    row["response"] = result.response
    row.update(fields)
    facts = _run_facts(result, attempt)
    facts["verifier_fields"] = list(fields)
    row["_palaestra"] = facts
    return row


def verdict_fields(verdict: Verdict) -> JsonDict:
    """The verdict's row fields; ``VerifierFailure`` unless its rewards are finite numbers.

    The last defence before the output file: a reward of NaN, ±inf or a non-number (``"x"``)
    is not a score, and must neither be written (JSON has no NaN: it became ``null``) nor
    reach the mean. About 0.3 µs a row.
    """
    reward = verdict.reward
    if not ((type(reward) is float or isinstance(reward, numbers.Real)) and math.isfinite(reward)):
        raise VerifierFailure(f"the verifier's reward is not a finite number: {reward!r:.80}")
    fields = verdict.to_fields()
    components = fields.get("reward_components")
    try:
        finite = components is None or all(map(math.isfinite, components.values()))
        finite = finite and all(map(math.isfinite, fields.get("step_rewards") or ()))
    except (TypeError, AttributeError):
        finite = False
    if not finite:
        raise VerifierFailure(
            "the verifier's reward_components or step_rewards are not all finite numbers"
        )
    return fields


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
    facts: JsonDict = {
        "attempt": attempt,
        "model_calls": result.model_calls,
        "tool_calls": result.tool_calls,
        "timings": {phase: round(seconds, 6) for phase, seconds in result.timings.items()},
    }
    if result.truncated:
        facts["truncated"] = result.truncated
    return facts

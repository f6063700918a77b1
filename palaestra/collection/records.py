"""The rows a run writes: dispatched inputs, finished rollouts and failure records.

Their shapes are ``palaestra.wire.rows``' ``TaskRow``, ``RolloutRow`` and ``FailureRow``; the
builders return them typed so, and build them as plain dicts (the hot path: ``cast`` costs
nothing), with the field names from there. A failure row carries
NeMo Gym's ``_ng_failure_class`` beside palaestra's ``failure``, so NeMo Gym's resume reads a
palaestra failures file as its own. A row's ``response`` is an Open Responses ``Response``
(``palaestra.wire.open_responses.conform``), whichever agent made it.
"""

from __future__ import annotations

from typing import cast

from palaestra.environment.verdicts import verdict_problem
from palaestra.errors import InputError, VerifierFailure
from palaestra.models.versions import version_span
from palaestra.types import AgentResult, Failure, FailureKind, JsonDict, Verdict
from palaestra.wire.open_responses import conform
from palaestra.wire.protocol import failure_fields
from palaestra.wire.rows import (
    AGENT_REF,
    FACTS,
    PARAMS,
    RESPONSE,
    ROLLOUT_INDEX,
    SOURCE,
    TASK_INDEX,
    FailureRow,
    RolloutRow,
    TaskRow,
)


def dispatch_row(
    task: JsonDict, *, task_index: int, rollout_index: int, agent_ref: JsonDict, overrides: JsonDict
) -> TaskRow:
    """The task as it is sent to the agent: sampling overrides applied, identities added."""
    row: JsonDict = dict(task)
    if overrides:
        row[PARAMS] = {**task[PARAMS], **overrides}
    row.setdefault(AGENT_REF, agent_ref)
    row[TASK_INDEX] = task_index
    row[ROLLOUT_INDEX] = rollout_index
    return cast(TaskRow, row)


def rollout_row(dispatched: TaskRow, result: AgentResult, *, attempt: int) -> RolloutRow:
    """A scored rollout in NeMo Gym's output form: the verify answer plus identities.

    Raises ``VerifierFailure`` when the verdict is not a score (see ``scored_fields``).
    ``_palaestra.verifier_fields`` names the fields the verifier returned, so the aggregate
    averages those and not the task's own fields (a numeric ``id``).
    """
    assert result.verdict is not None
    fields = scored_fields(result.verdict)
    row: JsonDict = dict(dispatched)
    row[RESPONSE] = _trajectory(result, dispatched)
    row.update(fields)
    facts = _run_facts(result, attempt)
    facts["verifier_fields"] = list(fields)
    row[FACTS] = facts
    return cast(RolloutRow, row)


def scored_fields(verdict: Verdict) -> JsonDict:
    """The verdict's row fields; ``VerifierFailure`` unless it is a score (``verdict_problem``).

    The last defence before the output file: a reward of NaN, ±inf or a non-number (``"x"``)
    is not a score, and must neither be written (JSON has no NaN: it became ``null``) nor
    reach the mean.
    """
    problem = verdict_problem(verdict)
    if problem is not None:
        raise VerifierFailure(problem)
    return verdict.to_fields()


def failure_row(
    dispatched: TaskRow,
    failure: Failure,
    result: AgentResult | None,
    *,
    attempt: int,
    worker_reruns: int = 0,
) -> FailureRow:
    """A rollout that has no reward; the partial trajectory is kept for debugging.

    ``worker_reruns`` is for a failure without its result (raised, or a trajectory that
    cannot be written): a result says it itself."""
    row: JsonDict = dict(dispatched)
    row.update(failure_fields(failure))
    if result is not None:
        row[RESPONSE] = _trajectory(result, dispatched)
        row[FACTS] = _run_facts(result, attempt)
    else:
        row[FACTS] = {"attempt": attempt}
        if worker_reruns:
            row[FACTS]["worker_reruns"] = worker_reruns
    return cast(FailureRow, row)


def _trajectory(result: AgentResult, dispatched: TaskRow) -> JsonDict | None:
    """The rollout's Response as the spec has it (None when the agent made none): as it is
    when ``run_episode`` conformed it already (``AgentResult.conformed``)."""
    if result.response is None or result.conformed:
        return result.response
    return conform(result.response, dispatched.get(PARAMS))


def input_error_row(error: InputError, *, task_index: int) -> FailureRow:
    """A task line that could not be read; no rollout of it can run."""
    row: JsonDict = {
        TASK_INDEX: task_index,
        ROLLOUT_INDEX: None,
        **failure_fields(Failure(FailureKind.INVALID_INPUT, error.describe())),
        SOURCE: {"path": error.path, "line": error.line, "field": error.field},
    }
    return cast(FailureRow, row)


def _run_facts(result: AgentResult, attempt: int) -> JsonDict:
    facts: JsonDict = {
        "attempt": attempt,
        "model_calls": result.model_calls,
        "tool_calls": result.tool_calls,
        "timings": {phase: round(seconds, 6) for phase, seconds in result.timings.items()},
    }
    if result.truncated:
        facts["truncated"] = result.truncated
    if result.producers is not None:  # who produced each output item (RunFacts.producers)
        facts["producers"] = result.producers
    if result.user_turns:
        facts["user_turns"] = result.user_turns
    if result.endpoints is not None:  # a model pool: where the calls went, and any move
        facts["endpoints"] = result.endpoints
        if len(result.endpoints) > 1:
            facts["endpoint_moves"] = len(result.endpoints) - 1
    if result.policy_versions is not None:  # which policy served each model request
        facts["policy_versions"] = result.policy_versions
        span = version_span(result.policy_versions)
        if span is not None:  # policy updates the rollout straddled
            facts["policy_version_span"] = span
    if result.resumed is not None:  # continued from a checkpoint (a durable rollout)
        facts["resumed"] = result.resumed
    if result.worker_reruns:
        facts["worker_reruns"] = result.worker_reruns
    if result.closed_book is not None:  # whether hosted tools were kept out of the requests
        facts["closed_book"] = result.closed_book
        if result.hosted_tools_dropped:
            facts["hosted_tools_dropped"] = result.hosted_tools_dropped
    if result.branches is not None:  # the shape of a gateway's calls (palaestra.gateway)
        facts["branches"] = result.branches
        facts["retokenized"] = result.retokenized
    return facts

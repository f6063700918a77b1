"""Wire names and codecs shared by palaestra's servers and their clients (no web framework).

A server half and its client half import the same names from here, so they cannot drift.
The failure codec is the one place that decides how a failed rollout travels: as palaestra's
own ``failure`` object, and in the form NeMo Gym's collector reads (``_ng_failure_class``),
never as a bare ``reward`` a peer would count as a score.
"""

from __future__ import annotations

from typing import Any

from palaestra.types import Failure, FailureKind, JsonDict

TASK_INDEX = "_ng_task_index"
ROLLOUT_INDEX = "_ng_rollout_index"
AGENT_REF = "agent_ref"

FAILURE = "failure"
"""palaestra's own failure object: ``{kind, reason, masked}``."""
NG_FAILURE_CLASS = "_ng_failure_class"
"""NeMo Gym's collector routes a row carrying this to its failures file, not its output."""
NG_FAILURE_TERMINAL = "_ng_failure_terminal"
"""NeMo Gym's collector never retries a row marked terminal on resume."""

SESSION_LOST = "session_lost"
"""The error ``type`` a server answers when a request names a session it does not know."""

# NeMo Gym 0.4 knows five failure classes (kill_shaped, timeout_exceeded, skipped, transient,
# legitimate). kill_shaped means "write nothing, re-dispatch on resume": palaestra never sends
# it, since its failures are records. A timed-out or invalid rollout is not retried by NeMo
# Gym's resume (terminal), the rest are, within its attempt budget.
_NG_CLASS: dict[FailureKind, tuple[str, bool]] = {
    FailureKind.TIMEOUT: ("timeout_exceeded", True),
    FailureKind.INVALID_INPUT: ("skipped", True),
    FailureKind.MODEL_ERROR: ("transient", False),
    FailureKind.SESSION_LOST: ("transient", False),
    FailureKind.WORKER_CRASH: ("transient", False),
}


def failure_fields(failure: Failure) -> JsonDict:
    """The fields a failed rollout or verify answer carries on the wire."""
    ng_class, terminal = _NG_CLASS.get(failure.kind, ("legitimate", False))
    fields: JsonDict = {FAILURE: failure.to_json(), NG_FAILURE_CLASS: ng_class}
    if terminal:
        fields[NG_FAILURE_TERMINAL] = True
    return fields


def failure_error(failure: Failure) -> JsonDict:
    """The body of a non-2xx answer for a failure: OpenAI's error shape plus the failure fields.

    Sent where the peer reads only the status (NeMo Evaluator's client raises on any non-2xx
    and counts an error, never a score).
    """
    error = {"message": failure.reason, "type": str(failure.kind), "param": None, "code": None}
    return {"error": error, **failure_fields(failure)}


def is_failure_row(row: dict[str, Any]) -> bool:
    """Whether a verify answer or rollout row is a failure (palaestra's or NeMo Gym's form)."""
    return FAILURE in row or NG_FAILURE_CLASS in row


def failure_from_fields(body: dict[str, Any]) -> Failure | None:
    """The failure a wire answer carries (palaestra's form first, then NeMo Gym's), or None."""
    raw = body.get(FAILURE)
    if isinstance(raw, dict):
        try:
            kind = FailureKind(str(raw.get("kind")))
        except ValueError:
            kind = FailureKind.INTERNAL_ERROR
        return Failure(kind, str(raw.get("reason", "")), bool(raw.get("masked", True)))
    ng_class = body.get(NG_FAILURE_CLASS)
    if ng_class is not None:
        kind = FailureKind.TIMEOUT if ng_class == "timeout_exceeded" else FailureKind.INTERNAL_ERROR
        return Failure(kind, f"the server marked the rollout failed ({ng_class})")
    return None

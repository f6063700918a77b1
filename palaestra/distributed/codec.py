"""What crosses between the collector and its workers: tasks, finished rollouts, errors.

A task goes out as the dispatched row's orjson bytes; a rollout comes back as the orjson bytes
of ``{"result": ...}`` (an ``AgentResult`` field by field) or ``{"raised": ...}`` (a failure
the runner raised). The worker checks what the collector would check before writing a row, so
the collector writes the same row from the decoded result as it would have in process:

- a verdict that is not a score becomes the ``verifier_error`` the collector would record;
- a result that is not JSON (a metric that is a set) is sent as the ``internal_error`` the
  collector records when a row cannot be written.

A raised ``RolloutFailure`` comes back as the same class (the collector tells
``ModelAuthError`` and ``ServiceUnreachable`` apart by class); any other exception as a
``RolloutFailure`` whose reason is ``<Type>: <message>``, the reason the collector gives it.
Encoding a result costs one ``orjson.dumps`` of the trajectory (a few µs for a short one).
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any, TypeVar

import orjson

from palaestra.collection.records import scored_fields
from palaestra.errors import ConfigError, PalaestraError, RolloutFailure, VerifierFailure
from palaestra.types import AgentResult, Failure, FailureKind, JsonDict, Verdict

T = TypeVar("T")

_RESULT_FIELDS = tuple(field.name for field in dataclasses.fields(AgentResult))
_VERDICT_FIELDS = tuple(field.name for field in dataclasses.fields(Verdict))


def encode_task(task: JsonDict) -> bytes:
    return orjson.dumps(task)


def decode_task(payload: bytes) -> JsonDict:
    task: JsonDict = orjson.loads(payload)
    return task


def encode_result(result: AgentResult, extra: JsonDict | None = None) -> bytes:
    """``result`` as it crosses to the collector, checked as the collector would check it;
    ``extra`` (the worker's counters) rides along beside it."""
    verdict = result.verdict
    if result.failure is None and verdict is not None and verdict.failure is None:
        try:
            scored_fields(verdict)
        except VerifierFailure as error:  # the collector records exactly this
            verdict.failure = Failure(error.kind, error.reason)
    fields: JsonDict = {name: getattr(result, name) for name in _RESULT_FIELDS}
    if verdict is not None:
        fields["verdict"] = {name: getattr(verdict, name) for name in _VERDICT_FIELDS}
        fields["verdict"]["failure"] = _failure_json(verdict.failure)
    fields["failure"] = _failure_json(result.failure)
    try:
        return orjson.dumps({"result": fields, **(extra or {})})
    except TypeError as error:
        failure = result.failure or (verdict.failure if verdict is not None else None)
        if failure is not None:  # the collector keeps such a failure without its trajectory
            return encode_raised(_raisable(failure.kind, failure.reason), extra)
        reason = f"the rollout's row cannot be written: {type(error).__name__}: {error}"
        return encode_raised(RolloutFailure(reason), extra)


def encode_raised(error: BaseException, extra: JsonDict | None = None) -> bytes:
    """An exception the runner raised instead of returning a result (``extra`` beside it)."""
    if isinstance(error, RolloutFailure):
        cls = type(error)
        raised = {"class": f"{cls.__module__}:{cls.__qualname__}", "kind": str(error.kind)}
        return orjson.dumps({"raised": {**raised, "reason": error.reason}, **(extra or {})})
    reason = f"{type(error).__name__}: {error}"
    failure = {"kind": str(FailureKind.INTERNAL_ERROR), "reason": reason}
    return orjson.dumps({"raised": failure, **(extra or {})})


def decode_result(payload: bytes) -> AgentResult:
    """The ``AgentResult`` a worker sent; raises the ``RolloutFailure`` it sent instead."""
    return result_of(orjson.loads(payload))


def result_of(message: JsonDict) -> AgentResult:
    """``decode_result`` of the message already parsed."""
    raised = message.get("raised")
    if raised is not None:
        raise _rebuilt(raised)
    fields = message["result"]
    verdict = fields.get("verdict")
    if verdict is not None:
        verdict["failure"] = _failure_of(verdict.get("failure"))
        fields["verdict"] = Verdict(**verdict)
    fields["failure"] = _failure_of(fields.get("failure"))
    return AgentResult(**fields)


def encode_error(error: BaseException) -> JsonDict:
    """Why a worker could not start, to be raised again by the collector's ``check``."""
    cls = type(error)
    return {"class": f"{cls.__module__}:{cls.__qualname__}", "message": str(error)}


def decode_error(error: JsonDict, worker: str) -> Exception:
    """The error ``encode_error`` described: the same class when it is palaestra's own (a
    ``ConfigError``, ``ModelUnreachable``), else a ``ConfigError`` naming the worker."""
    cls = _palaestra_class(str(error.get("class", "")), PalaestraError)
    message = str(error.get("message", ""))
    if cls is not None:
        try:
            rebuilt: Exception = cls(message)
            return rebuilt
        except Exception:  # a constructor with other arguments: say it in words
            pass
    name = str(error.get("class", "")).rpartition(":")[2]
    return ConfigError(f"{worker} could not start: {f'{name}: ' if name else ''}{message}")


def _failure_json(failure: Failure | None) -> JsonDict | None:
    return failure.to_json() if failure is not None else None


def _failure_of(fields: JsonDict | None) -> Failure | None:
    if fields is None:
        return None
    return Failure(FailureKind(fields["kind"]), fields["reason"], bool(fields.get("masked", True)))


def _raisable(kind: FailureKind, reason: str) -> RolloutFailure:
    error = RolloutFailure(reason)
    error.kind = kind
    return error


def _rebuilt(raised: JsonDict) -> RolloutFailure:
    """The raised failure again: its own class when it is palaestra's, so the collector
    tells a lost model (``ModelUnreachable``) from one rollout's failure."""
    kind, reason = FailureKind(raised["kind"]), str(raised["reason"])
    cls = _palaestra_class(str(raised.get("class", "")), RolloutFailure)
    if cls is None:
        return _raisable(kind, reason)
    error: RolloutFailure = cls.__new__(cls)
    RolloutFailure.__init__(error, reason)  # subclasses with more arguments keep their class
    if error.kind != kind:
        error.kind = kind
    return error


def _palaestra_class(name: str, base: type[T]) -> type[T] | None:
    """The class ``module:qualname`` names, only if it is palaestra's and a ``base``."""
    module, _, qualname = name.partition(":")
    if not (module == "palaestra" or module.startswith("palaestra.")) or not qualname:
        return None
    try:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    return found if isinstance(found, type) and issubclass(found, base) else None

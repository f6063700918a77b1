"""Which policy wrote which tokens: the policy version of every model request of a rollout.

In asynchronous RL the weights change while rollouts run, and one rollout's calls (even one
call's segments, when an update aborted it: ``palaestra.models.openai.resume``) can be served
by several versions of the policy. A trainer that bounds off-policy staleness needs to know
which. The version of a request is, in order of preference:

1. the engine's own, read from its answer: a top-level ``policy_version`` or
   ``weight_version``, or ``metadata.weight_version`` (SGLang's), an integer or a string of
   one (``engine_version``);
2. the trainer's: the ``PolicyClock`` of the running rollouts (``RolloutSampler``'s
   ``policy_version``, set by ``set_policy(..., version=N)`` or assigned), which each of its
   rollouts' scopes holds (``RolloutScope.clock``), read when the request is answered: an
   update lands between requests, so the version that answered is the one current then.

Each answered model request inside a rollout adds its version to the rollout's scope
(``RolloutScope.versions``); the rollout's row keeps them (``_palaestra.policy_versions``).
A request with neither records nothing; a simulated user's calls record in the user's scope,
never the policy's.
"""

from __future__ import annotations

from typing import Any

from palaestra.types import JsonDict


class PolicyClock:
    """The policy version a trainer says its engines serve now (None: not told)."""

    __slots__ = ("version",)

    def __init__(self, version: int | None = None) -> None:
        self.version = version


def _as_version(value: Any) -> int | None:
    if type(value) is int:
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def engine_version(answer: JsonDict) -> int | None:
    """The policy version an engine reported in its answer, if any."""
    for key in ("policy_version", "weight_version"):
        if key in answer:
            return _as_version(answer[key])
    metadata = answer.get("metadata")
    if isinstance(metadata, dict) and "weight_version" in metadata:
        return _as_version(metadata["weight_version"])
    return None


def served_by(answer: JsonDict, clock: PolicyClock | None) -> int | None:
    """The version that served ``answer``: the engine's, else ``clock``'s (the rollout's).

    Every model answer of a rollout asks, and most report nothing (an empty ``metadata`` is
    the Responses API's default): three lookups rule the engine out before its reading."""
    if "policy_version" in answer or "weight_version" in answer or answer.get("metadata"):
        version = engine_version(answer)
        if version is not None:
            return version
    return None if clock is None else clock.version


def span(versions: list[int] | None) -> int:
    """How many versions a rollout's requests span (0: one version, or none recorded)."""
    return max(versions) - min(versions) if versions else 0


def version_span(versions: list[int] | None) -> int | None:
    """How many policy updates one rollout straddled: its newest serving version minus its
    oldest (0: one policy served every call; None: no version known)."""
    return span(versions) if versions else None


def version_age(versions: list[int] | None, current: int | None) -> int | None:
    """How many versions behind the trainer's ``current`` one the rollout's oldest serving
    policy is, when the trainer gets it (the newest version served counts when it is ahead
    of ``current``; None when either is unknown). A trainer's staleness bound compares this."""
    if not versions or current is None:
        return None
    return max(current, max(versions)) - min(versions)

"""Token-level views of a rollout for RL trainers: its model calls, contiguity, and a loss mask.

A rollout's Response carries, on the last output item of each model call, that call's
``prompt_token_ids``, ``generation_token_ids`` and ``generation_log_probs`` (when the model
captures them: ``options: {return_tokens: true}`` or ``{token_mode: true}``). A trainer needs
them to fit together: the prompt of call k+1 must start with prompt(k) + generation(k), or it
would optimise tokens the policy never produced (NeMo RL asserts this). ``check_contiguity``
says, per rollout, whether they do and where they break; ``training_sequence`` builds the one
token sequence a trainer consumes (the last call's prompt and generation) with its loss mask
and aligned log-probs, and refuses a rollout that is not contiguous rather than mask it wrong.
A rollout whose calls branch (a harness that compacts, retries, runs sub-agents) is a tree:
``palaestra.training.tree`` gives one sequence per leaf.

Pure functions on plain dicts: no model, no I/O, microseconds per rollout.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from palaestra.errors import PalaestraError
from palaestra.types import TRAINABLE_PRODUCERS, JsonDict, Verdict

__all__ = [
    "Contiguity",
    "ContiguityError",
    "ModelCall",
    "TrainingSequence",
    "check_contiguity",
    "model_calls",
    "training_sequence",
]


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One model call of a rollout, as its last output item recorded it.

    ``index`` counts the calls from 0; ``item_index`` is the position of the item carrying the
    fields in the Response's ``output``.
    """

    index: int
    item_index: int
    prompt_token_ids: list[int]
    generation_token_ids: list[int]
    generation_log_probs: list[float]


def _ints(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    )


def model_calls(response: Mapping[str, Any]) -> list[ModelCall]:
    """The model calls of a rollout in order: every output item with all three training fields.

    An item with the fields but malformed values (ids that are not ints, log-probs that are
    not numbers or not one per generated id) raises ``ContiguityError``: it cannot be trained
    on, and it is not silently skipped.
    """
    calls: list[ModelCall] = []
    output = response.get("output") or []
    for position, item in enumerate(output):
        if not isinstance(item, dict) or "generation_token_ids" not in item:
            continue
        prompt: Any = item.get("prompt_token_ids")
        generated: Any = item.get("generation_token_ids")
        log_probs: Any = item.get("generation_log_probs")
        if not (_ints(prompt) and _ints(generated) and isinstance(log_probs, list)):
            raise ContiguityError(
                f"output item {position} has malformed training fields", call=len(calls)
            )
        if len(log_probs) != len(generated) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in log_probs
        ):
            raise ContiguityError(
                f"output item {position} has {len(log_probs)} log-probs for "
                f"{len(generated)} generated ids",
                call=len(calls),
            )
        calls.append(
            ModelCall(len(calls), position, prompt, generated, [float(v) for v in log_probs])
        )
    return calls


@dataclass(frozen=True, slots=True)
class Contiguity:
    """Whether a rollout's model calls fit together, and where they first do not.

    ``contiguous`` is True when every prompt(k+1) starts with prompt(k) + generation(k) (a
    rollout with one call, or none, is contiguous; ``calls`` says how many were found). On a
    break, ``break_call`` is k+1, ``break_position`` the first index in prompt(k+1) that
    differs from (or is missing from) prompt(k) + generation(k), and ``reason`` one line.
    """

    contiguous: bool
    calls: int
    break_call: int | None = None
    break_position: int | None = None
    reason: str | None = None


class ContiguityError(PalaestraError):
    """A rollout whose tokens cannot be trained on as one sequence; ``contiguity`` says where."""

    def __init__(self, reason: str, *, call: int | None = None, position: int | None = None):
        super().__init__(reason)
        self.reason = reason
        self.contiguity = Contiguity(False, 0, call, position, reason)


def _first_difference(expected: Sequence[int], found: Sequence[int]) -> int | None:
    for position, (want, got) in enumerate(zip(expected, found, strict=False)):
        if want != got:
            return position
    if len(found) < len(expected):
        return len(found)
    return None


def check_contiguity(response: Mapping[str, Any]) -> Contiguity:
    """Walk the rollout's model calls and check each prompt extends the previous call's prompt
    and generation; return the first break (never raise for one)."""
    try:
        calls = model_calls(response)
    except ContiguityError as error:
        return error.contiguity
    for previous, current in itertools.pairwise(calls):
        expected = previous.prompt_token_ids + previous.generation_token_ids
        found = current.prompt_token_ids
        position = _first_difference(expected, found)
        if position is not None:
            reason = (
                f"the prompt of model call {current.index} differs from the prompt and "
                f"generation of call {previous.index} at token {position} "
                f"(expected {_at(expected, position)}, found {_at(found, position)})"
            )
            return Contiguity(False, len(calls), current.index, position, reason)
    return Contiguity(True, len(calls))


def _at(ids: Sequence[int], position: int) -> str:
    return str(ids[position]) if position < len(ids) else "the end"


@dataclass(frozen=True, slots=True)
class TrainingSequence:
    """One rollout, or one leaf of a rollout whose calls form a tree, as a trainer consumes it.

    ``token_ids`` is the last call's prompt followed by its generation: the whole rollout
    (of a tree: the leaf's path, ``palaestra.training.tree``).
    ``loss_mask[i]`` is 1 where the policy generated token i (in any call) and 0 for prompt,
    tool output, user, and template tokens; ``log_probs[i]`` is the policy's log-prob of
    token i where the mask is 1, and 0.0 elsewhere. ``prompt_length`` is the length of the
    first call's prompt (the task). ``turn_ends[k]`` is the index of the last generated token
    of call ``calls[k]`` (where a per-turn reward attaches; -1 for a call that generated
    nothing), and
    ``step_rewards`` are the verdict's, aligned to those turns. ``reward`` and
    ``reward_components`` are the verdict's as well.
    """

    token_ids: list[int]
    loss_mask: list[int]
    log_probs: list[float]
    prompt_length: int
    turn_ends: list[int]
    reward: float | None = None
    reward_components: dict[str, float] | None = None
    step_rewards: list[float] | None = None
    contiguity: Contiguity = field(default_factory=lambda: Contiguity(True, 0))
    calls: list[int] = field(default_factory=list)
    """The model calls whose sampled tokens this sequence trains (``turn_ends`` and
    ``step_rewards`` are aligned with them): every call for a rollout that is one line."""
    leaf: int = 0
    """Which of the rollout's sequences this is (``palaestra.training.tree``), from 0."""
    leaves: int = 1
    """How many sequences the rollout gives: one per leaf of its call tree."""
    retokenized: int = 0
    """Calls of the rollout whose ids do not extend the call they continue at the message
    level (``palaestra.training.tree.CallTree.retokenized``)."""

    @property
    def generated_tokens(self) -> int:
        return sum(self.loss_mask)


def training_sequence(
    response: Mapping[str, Any],
    verdict: Verdict | JsonDict | None = None,
    *,
    producers: Sequence[str] | None = None,
) -> TrainingSequence:
    """The token sequence, loss mask and log-probs of a rollout, with its rewards.

    ``verdict`` is the rollout's ``Verdict`` or a rollout row (``reward``,
    ``reward_components``, ``step_rewards`` read from it, and ``producers`` from its
    ``_palaestra`` when not given). Raises ``ContiguityError`` when the rollout has no model
    call with training fields, when its calls are not contiguous (``check_contiguity``), when
    ``step_rewards`` do not match its number of calls, or when an item carrying a call's
    token ids was not produced by the policy (``producers``, aligned with the output): the
    mask covers the policy's tokens only, never a simulated user's or a tool's.
    """
    producers = recorded_producers(verdict, producers)
    contiguity = check_contiguity(response)
    if not contiguity.contiguous:
        raise ContiguityError(
            contiguity.reason or "not contiguous",
            call=contiguity.break_call,
            position=contiguity.break_position,
        )
    calls = model_calls(response)
    if not calls:
        raise ContiguityError(
            "the rollout has no model call with token ids (set return_tokens or token_mode)"
        )
    check_producers(response, calls, producers)
    last = calls[-1]
    token_ids = last.prompt_token_ids + last.generation_token_ids
    mask = [0] * len(token_ids)
    log_probs = [0.0] * len(token_ids)
    turn_ends: list[int] = []
    for call in calls:
        start = len(call.prompt_token_ids)
        for offset, value in enumerate(call.generation_log_probs):
            mask[start + offset] = 1
            log_probs[start + offset] = value
        turn_ends.append(
            start + len(call.generation_token_ids) - 1 if call.generation_token_ids else -1
        )
    reward, components, steps = _rewards(verdict)
    if steps is not None and len(steps) != len(calls):
        raise ContiguityError(
            f"{len(steps)} step rewards for {len(calls)} model calls: they cannot be aligned"
        )
    return TrainingSequence(
        token_ids=token_ids,
        loss_mask=mask,
        log_probs=log_probs,
        prompt_length=len(calls[0].prompt_token_ids),
        turn_ends=turn_ends,
        reward=reward,
        reward_components=components,
        step_rewards=steps,
        contiguity=contiguity,
        calls=[call.index for call in calls],
    )


def recorded_producers(
    verdict: Verdict | JsonDict | None, producers: Sequence[str] | None
) -> Sequence[str] | None:
    """``producers`` when given, else a rollout row's own (its ``_palaestra.producers``)."""
    if producers is None and isinstance(verdict, Mapping):
        facts = verdict.get("_palaestra")
        recorded = facts.get("producers") if isinstance(facts, Mapping) else None
        producers = recorded if isinstance(recorded, list) else None
    return producers


def check_producers(
    response: Mapping[str, Any], calls: Sequence[ModelCall], producers: Sequence[str] | None
) -> None:
    """Raise ``ContiguityError`` when an item carrying a call's token ids was not produced by
    the policy (``producers``, aligned with the output): only the policy's tokens train."""
    output = response.get("output")
    if producers is None or not isinstance(output, list) or len(producers) != len(output):
        return
    for call in calls:
        producer = producers[call.item_index]
        if producer not in TRAINABLE_PRODUCERS:
            raise ContiguityError(
                f"output item {call.item_index} carries model call {call.index}'s token "
                f"ids but was produced by '{producer}', not the policy: only the policy's "
                "tokens are trained",
                call=call.index,
            )


def _rewards(
    verdict: Verdict | JsonDict | None,
) -> tuple[float | None, dict[str, float] | None, list[float] | None]:
    if verdict is None:
        return None, None, None
    if isinstance(verdict, Verdict):
        steps = list(verdict.step_rewards) if verdict.step_rewards is not None else None
        return verdict.reward, verdict.reward_components, steps
    reward = verdict.get("reward")
    components = verdict.get("reward_components")
    steps = verdict.get("step_rewards")
    return (
        float(reward) if isinstance(reward, int | float) and math.isfinite(reward) else None,
        dict(components) if isinstance(components, dict) else None,
        [float(v) for v in steps] if isinstance(steps, list) else None,
    )

"""Rollouts and groups as a trainer consumes them: tokens, mask, log-probs, rewards, identity.

A ``Rollout`` is one finished rollout of a task, reduced to what an RL trainer needs: the
token sequence (``token_ids``; the first ``prompt_length`` are the task's prompt), which
tokens the policy generated (``loss_mask``), their log-probs, the reward, per-turn rewards
and where each turn ends, plus its group and task. A ``Group`` is the ``size`` rollouts of
one task sampled together (a GRPO group).

A failed rollout is never a reward of 0. It carries its ``failure`` (kind and reason) and
``reward`` None, and the caller chooses what a group does with it (``OnFailure``):

- ``"exclude"``: it is left out of ``group.rollouts`` (the group may be smaller than asked);
- ``"mask"``: it stays in ``group.rollouts`` with ``loss_mask`` all 0 and reward None, so the
  group keeps its shape (its tokens are its first model call's, or none);
- ``"raise"``: the batch stops with ``RolloutFailed``.

Either way it is in ``group.failures`` and counted. A rollout whose tokens cannot be trained
on (none captured, malformed, or an item with token ids not the policy's) is a failure of that
rollout (``model_error``, with the reason).

A rollout whose model calls form a tree (a harness that compacts its history, retries, runs a
sub-agent: ``palaestra.training.tree``) is one ``Rollout`` per leaf in ``group.rollouts``,
next to each other: the same ``sample``, ``leaf`` 0.. ``leaves`` - 1, every sampled token in
exactly one of them, and the rollout's reward on each. What is counted per rollout (its
reward in ``mean_reward``, the task sampler's attempts, ``stats``) is counted once, so a
rollout that branched does not weigh more in its group's baseline.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from palaestra.errors import PalaestraError
from palaestra.models.versions import version_span
from palaestra.training.tokens import Contiguity, ContiguityError, model_calls
from palaestra.training.tree import training_sequences
from palaestra.types import AgentResult, Failure, FailureKind, JsonDict

__all__ = ["Group", "OnFailure", "Rollout", "RolloutFailed", "RolloutStats", "rollouts_of"]

OnFailure = Literal["exclude", "mask", "raise"]
"""What a group does with a failed rollout (see the module docstring)."""

ON_FAILURE: tuple[OnFailure, ...] = ("exclude", "mask", "raise")
OnStale = Literal["exclude", "mask"]
"""What a sampler does with a stale rollout (``max_staleness``): leave it out of its group, or
keep it with every token masked."""
ON_STALE: tuple[OnStale, ...] = ("exclude", "mask")

REASONS_KEPT = 100
"""Distinct failure reasons counted; more count as one "(other reasons)" line."""


@dataclass(frozen=True, slots=True)
class Rollout:
    """One rollout of a task, as a trainer consumes it.

    ``token_ids`` is the whole rollout (the last model call's prompt and generation), or of a
    rollout whose calls form a tree, one leaf's path (``leaf`` of ``leaves``);
    ``loss_mask[i]`` is 1 where the policy generated token i and 0 for the prompt, tool
    outputs and template tokens; ``log_probs[i]`` the policy's log-prob of token i where the
    mask is 1 (0.0 elsewhere). ``turn_ends[k]`` is the index of the last token of model call
    k, where ``step_rewards[k]`` attaches. ``group_id`` is unique over the sampler's life,
    ``sample`` is the rollout's place in its group, ``step`` the batch it belongs to.
    """

    group_id: int
    task_index: int
    sample: int
    step: int
    token_ids: list[int]
    loss_mask: list[int]
    log_probs: list[float]
    prompt_length: int
    turn_ends: list[int] = field(default_factory=list)
    reward: float | None = None
    reward_components: dict[str, float] | None = None
    step_rewards: list[float] | None = None
    failure: Failure | None = None
    truncated: str | None = None
    """Why the agent stopped before the model finished (``"max_steps"``), if it did."""
    contiguity: Contiguity | None = None
    response: JsonDict | None = None
    """The whole trajectory (an OpenAI Response), also kept for a failed rollout."""
    policy_versions: list[int] | None = None
    """The policy version that served each model request, in order (``AgentResult``)."""
    producers: list[str] | None = None
    """Who produced each item of ``response["output"]`` (``palaestra.types.Producer``), as
    the row's ``producers``; the loss mask is 1 only inside the policy's items."""
    stale: bool = False
    """Its requests were served by policies more than the sampler's ``max_staleness``
    versions apart (or behind the current one): masked or excluded (``on_stale``)."""
    leaf: int = 0
    """Which sequence of its rollout this is, from 0 (``palaestra.training.tree``)."""
    leaves: int = 1
    """How many sequences its rollout gave (its call tree's leaves; 1 for a line)."""
    calls: list[int] | None = None
    """The model calls whose sampled tokens this sequence trains (``turn_ends`` is aligned
    with them)."""
    retokenized: int = 0
    """Calls of the rollout whose ids do not extend the call they continue at the message
    level: re-tokenised on the way, so branched rather than spliced."""
    version_span: int | None = None
    """Policy updates the rollout straddled: its newest serving version minus its oldest."""
    age: int | None = None
    """Versions its oldest serving policy is behind the trainer's when the sampler handed it
    over (``palaestra.models.versions.version_age``): what a staleness limit compares."""

    @property
    def failed(self) -> bool:
        return self.failure is not None

    @property
    def prompt_ids(self) -> list[int]:
        return self.token_ids[: self.prompt_length]

    @property
    def completion_ids(self) -> list[int]:
        """Everything after the prompt: generated tokens and, between turns, tool outputs."""
        return self.token_ids[self.prompt_length :]

    @property
    def completion_mask(self) -> list[int]:
        return self.loss_mask[self.prompt_length :]

    @property
    def completion_log_probs(self) -> list[float]:
        return self.log_probs[self.prompt_length :]


@dataclass(slots=True)
class Group:
    """The rollouts of one task sampled together (a GRPO group), when all of them finished.

    ``rollouts`` is what to train on, ordered by ``sample``: the scored rollouts, plus the
    failed ones when the policy is ``"mask"``. ``failures`` holds every failed rollout of the
    group whatever the policy.
    """

    group_id: int
    step: int
    task_index: int
    task: JsonDict
    size: int
    rollouts: list[Rollout] = field(default_factory=list)
    failures: list[Rollout] = field(default_factory=list)

    @property
    def scored(self) -> list[Rollout]:
        return [rollout for rollout in self.rollouts if rollout.failure is None]

    @property
    def rewards(self) -> list[float | None]:
        """One per entry of ``rollouts`` (None for a masked failure): a rollout that branched
        repeats its reward on each of its leaves."""
        return [rollout.reward for rollout in self.rollouts]

    @property
    def sample_rewards(self) -> dict[int, float]:
        """The reward of each scored rollout, once per rollout (by ``sample``)."""
        return {
            rollout.sample: rollout.reward
            for rollout in self.scored
            if rollout.reward is not None and rollout.leaf == 0
        }

    @property
    def mean_reward(self) -> float | None:
        """The mean over the group's scored rollouts, each counted once however it branched."""
        rewards = list(self.sample_rewards.values())
        return sum(rewards) / len(rewards) if rewards else None


class RolloutFailed(PalaestraError):
    """A rollout failed and the policy is ``on_failure="raise"``; ``rollout`` is the one."""

    def __init__(self, rollout: Rollout) -> None:
        assert rollout.failure is not None
        failure = rollout.failure
        super().__init__(
            f"rollout {rollout.sample} of task {rollout.task_index} (group {rollout.group_id}) "
            f"failed: {failure.kind}: {failure.reason}"
        )
        self.rollout = rollout
        self.failure = failure


@dataclass(slots=True)
class RolloutStats:
    """What a sampler has produced so far: groups, rollouts, and failures by kind and reason."""

    groups: int = 0
    rollouts: int = 0
    scored: int = 0
    masked: int = 0
    excluded: int = 0
    sequences: int = 0
    """Training sequences of the scored rollouts: one per leaf of each one's call tree."""
    branched: int = 0
    """Scored rollouts whose calls formed a tree with more than one leaf."""
    retokenized: int = 0
    """Calls found re-tokenised (``Rollout.retokenized``), over every scored rollout."""
    stale: int = 0
    """Scored rollouts found stale (``max_staleness``), masked or excluded as ``on_stale``."""
    stale_excluded: int = 0
    """Of those, the ones left out of their group (``on_stale="exclude"``)."""
    failures: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)

    @property
    def failed(self) -> int:
        return sum(self.failures.values())

    def count(self, rollout: Rollout, on_failure: OnFailure) -> None:
        """Count ``rollout`` (a leaf after the first adds a sequence, not a rollout)."""
        failure = rollout.failure
        if failure is None:
            self.sequences += 1
            if rollout.leaf:
                return
            self.rollouts += 1
            self.scored += 1
            self.branched += rollout.leaves > 1
            self.retokenized += rollout.retokenized
            return
        self.rollouts += 1
        self.failures[str(failure.kind)] += 1
        key = f"{failure.kind}: {failure.reason}"[:160]
        if key not in self.reasons and len(self.reasons) >= REASONS_KEPT:
            key = "(other reasons)"
        self.reasons[key] += 1
        if on_failure == "mask":
            self.masked += 1
        elif on_failure == "exclude":
            self.excluded += 1


def rollouts_of(
    result: AgentResult, *, group_id: int, task_index: int, sample: int, step: int
) -> list[Rollout]:
    """The ``Rollout``s of an agent's result: one per leaf of its call tree, or its failure.

    A failure of the agent or the verdict is kept as it is; a rollout whose tokens cannot be
    trained on (none captured, malformed, not the policy's) fails as ``model_error`` with the
    reason. A failed rollout keeps its first model call's tokens, all masked.
    """
    identity: dict[str, Any] = {
        "group_id": group_id,
        "task_index": task_index,
        "sample": sample,
        "step": step,
    }
    verdict = result.verdict
    failure = result.failure or (verdict.failure if verdict is not None else None)
    if failure is None and (verdict is None or result.response is None):
        failure = Failure(
            FailureKind.INTERNAL_ERROR, "the agent returned neither verdict nor failure"
        )
    contiguity: Contiguity | None = None
    if failure is None:
        assert result.response is not None
        try:
            sequences = training_sequences(result.response, verdict, producers=result.producers)
        except ContiguityError as error:
            failure = Failure(
                FailureKind.MODEL_ERROR, f"tokens cannot be trained on: {error.reason}"
            )
            contiguity = error.contiguity
        else:
            span = version_span(result.policy_versions)
            return [
                Rollout(
                    **identity,
                    token_ids=sequence.token_ids,
                    loss_mask=sequence.loss_mask,
                    log_probs=sequence.log_probs,
                    prompt_length=sequence.prompt_length,
                    turn_ends=sequence.turn_ends,
                    reward=sequence.reward,
                    reward_components=sequence.reward_components,
                    step_rewards=sequence.step_rewards,
                    truncated=result.truncated,
                    contiguity=sequence.contiguity,
                    response=result.response,
                    policy_versions=result.policy_versions,
                    producers=result.producers,
                    leaf=sequence.leaf,
                    leaves=sequence.leaves,
                    calls=sequence.calls,
                    retokenized=sequence.retokenized,
                    version_span=span,
                )
                for sequence in sequences
            ]
    return [
        failed_rollout(
            failure, result.response, contiguity=contiguity, truncated=result.truncated, **identity
        )
    ]


def failed_rollout(
    failure: Failure,
    response: JsonDict | None,
    *,
    group_id: int,
    task_index: int,
    sample: int,
    step: int,
    contiguity: Contiguity | None = None,
    truncated: str | None = None,
) -> Rollout:
    """A failed rollout: reward None, every token masked (its first call's, when it had one)."""
    prompt: list[int] = []
    generated: list[int] = []
    if response is not None:
        try:
            calls = model_calls(response)
        except ContiguityError:
            calls = []
        if calls:
            prompt, generated = calls[0].prompt_token_ids, calls[0].generation_token_ids
    tokens = prompt + generated
    return Rollout(
        group_id=group_id,
        task_index=task_index,
        sample=sample,
        step=step,
        token_ids=tokens,
        loss_mask=[0] * len(tokens),
        log_probs=[0.0] * len(tokens),
        prompt_length=len(prompt),
        failure=failure,
        truncated=truncated,
        contiguity=contiguity,
        response=response,
    )

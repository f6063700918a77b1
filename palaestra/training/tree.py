"""A rollout's model calls as a tree, and one training sequence per leaf.

A harness that compacts its history, retries a call or runs a sub-agent makes calls whose
prompt does not extend the previous call's prompt and generation: the calls form a tree, not
a line. ``call_tree`` finds it from the token ids alone: a call's parent is the earlier call
whose ``prompt_token_ids + generation_token_ids`` is a prefix of the call's prompt (the
longest such prefix, the latest call among equals); a call with none starts a new root.
Because a parent's ids are literally the start of its child's prompt, splicing a path into one
sequence puts every sampled token exactly where the engine sampled it.

A gateway in front of the model may also say, on the item carrying a call's token ids, which
call it continues at the message level: ``call_parent`` (that call's ``call_index``; when the
items carry no ``call_index``, the position among the rollout's model calls). A call whose
ids do not extend the call it claims to continue was re-tokenised on the way (the text was
the same, the ids are not): it is counted in ``CallTree.retokenized`` and placed by its ids
like any other call, never spliced onto the claimed parent.

``training_sequences`` turns the tree into what a trainer consumes: one ``TrainingSequence``
per leaf (the leaf's prompt and generation, a loss mask over the sampled tokens of the calls
on its path, aligned log-probs). Every sampled token is trained exactly once: a call shared by
several leaves (the ancestor of a retry, or the history before a sub-agent's branch) is
trained in the last of them, by call order, and is context (mask 0) in the others. Which one
does not change the gradient of the token itself: a causal model's log-prob of a token
depends only on the tokens before it, and those are the same in every leaf through the call.
The last leaf is chosen because it is the branch the harness ended on, whose final state the
verdict scored: it trains its whole path, so a trainer that can take only one sequence per
rollout (TRL's ``rollout_func``) takes that one whole. A rollout whose calls form a line has
one leaf and gives exactly ``training_sequence``'s sequence.

Pure functions on plain dicts, as ``palaestra.training.tokens``.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from palaestra.training.tokens import (
    Contiguity,
    ContiguityError,
    ModelCall,
    TrainingSequence,
    _rewards,
    check_producers,
    model_calls,
    recorded_producers,
)
from palaestra.types import CALL_INDEX, CALL_PARENT, JsonDict, Verdict

__all__ = ["CallTree", "call_tree", "training_sequences"]


@dataclass(frozen=True, slots=True)
class CallTree:
    """The model calls of a rollout and who continues whom.

    ``parents[k]`` is the index of call k's parent (``calls[k].index``), None for a root.
    ``retokenized`` lists the calls whose claimed message-level parent their ids do not
    extend (see the module docstring). ``leaves`` are the calls no other call continues,
    in call order.
    """

    calls: list[ModelCall]
    parents: list[int | None]
    retokenized: list[int]

    @property
    def leaves(self) -> list[int]:
        continued = {parent for parent in self.parents if parent is not None}
        return [call.index for call in self.calls if call.index not in continued]

    @property
    def roots(self) -> list[int]:
        return [index for index, parent in enumerate(self.parents) if parent is None]

    @property
    def branches(self) -> int:
        """How many training sequences the rollout gives (its leaves)."""
        return len(self.leaves)

    def path(self, leaf: int) -> list[int]:
        """The calls from ``leaf``'s root down to ``leaf``, in order."""
        path: list[int] = []
        at: int | None = leaf
        while at is not None:
            path.append(at)
            at = self.parents[at]
        return path[::-1]


def _extends(prompt: Sequence[int], history: Sequence[int]) -> bool:
    size = len(history)
    if size > len(prompt):
        return False
    # The last token first: most non-parents differ at their end, and the check is O(1).
    return size == 0 or (prompt[size - 1] == history[-1] and prompt[:size] == history)


def call_tree(response: Mapping[str, Any]) -> CallTree:
    """The tree of ``response``'s model calls (see the module docstring).

    Raises ``ContiguityError`` for malformed training fields, as ``model_calls`` does.
    """
    calls = model_calls(response)
    histories = [call.prompt_token_ids + call.generation_token_ids for call in calls]
    parents: list[int | None] = []
    # Earlier calls, longest history first (the latest among equals): the first that the
    # prompt extends is the parent. On a line that is the previous call, found at once.
    order: list[int] = []
    for call in calls:
        prompt = call.prompt_token_ids
        parents.append(next((k for k in order if _extends(prompt, histories[k])), None))
        insort(order, call.index, key=lambda k: (-len(histories[k]), -k))
    return CallTree(calls, parents, _retokenized(response, calls, parents))


def _retokenized(
    response: Mapping[str, Any], calls: list[ModelCall], parents: list[int | None]
) -> list[int]:
    output: Any = response.get("output")
    items: list[Any] = output if isinstance(output, list) else []
    claimed = [_int(items[call.item_index], CALL_PARENT) for call in calls]
    if all(parent is None for parent in claimed):
        return []
    own = [_int(items[call.item_index], CALL_INDEX) for call in calls]
    position = (
        {number: k for k, number in enumerate(own) if number is not None}
        if any(number is not None for number in own)
        else {k: k for k in range(len(calls))}
    )
    found: list[int] = []
    for call, claim in zip(calls, claimed, strict=True):
        parent = position.get(claim) if claim is not None else None
        if parent is None or parent >= call.index:
            continue  # no claim, or a claim about a call without token ids
        history = calls[parent].prompt_token_ids + calls[parent].generation_token_ids
        if not _extends(call.prompt_token_ids, history):
            found.append(call.index)
    return found


def _int(item: Any, key: str) -> int | None:
    value = item.get(key) if isinstance(item, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def training_sequences(
    response: Mapping[str, Any],
    verdict: Verdict | JsonDict | None = None,
    *,
    producers: Sequence[str] | None = None,
) -> list[TrainingSequence]:
    """One ``TrainingSequence`` per leaf of the rollout's call tree, in leaf order.

    Each sequence is its leaf's prompt and generation; its mask is 1 on the sampled tokens of
    the calls on its path that it trains (each call in exactly one sequence: see the module
    docstring), with their log-probs. ``calls`` names those calls and ``turn_ends`` /
    ``step_rewards`` are aligned with them; ``reward`` and ``reward_components`` are the
    rollout's, the same in every sequence. A rollout whose calls form a line gives the one
    sequence ``training_sequence`` gives (reading the calls once, where it reads them twice).
    Raises ``ContiguityError`` when no call carries token ids, when ``step_rewards`` do not
    match the number of calls, or when an item carrying token ids was not produced by the
    policy.
    """
    tree = call_tree(response)
    if not tree.calls:
        raise ContiguityError(
            "the rollout has no model call with token ids (set return_tokens or token_mode)"
        )
    check_producers(response, tree.calls, recorded_producers(verdict, producers))
    reward, components, steps = _rewards(verdict)
    if steps is not None and len(steps) != len(tree.calls):
        raise ContiguityError(
            f"{len(steps)} step rewards for {len(tree.calls)} model calls: they cannot be aligned"
        )
    leaves = tree.leaves
    # Each call is trained in the last leaf through it: walk the leaves from the last.
    owned_by: dict[int, list[int]] = {}
    trained: set[int] = set()
    for leaf in reversed(leaves):
        owned_by[leaf] = [index for index in tree.path(leaf) if index not in trained]
        trained.update(owned_by[leaf])
    sequences: list[TrainingSequence] = []
    for leaf in leaves:
        path = tree.path(leaf)
        last = tree.calls[leaf]
        token_ids = last.prompt_token_ids + last.generation_token_ids
        mask = [0] * len(token_ids)
        log_probs = [0.0] * len(token_ids)
        owned = owned_by[leaf]
        turn_ends: list[int] = []
        for index in owned:
            call = tree.calls[index]
            start = len(call.prompt_token_ids)
            end = start + len(call.generation_token_ids)
            mask[start:end] = [1] * (end - start)
            log_probs[start:end] = call.generation_log_probs
            turn_ends.append(end - 1 if end > start else -1)
        sequences.append(
            TrainingSequence(
                token_ids=token_ids,
                loss_mask=mask,
                log_probs=log_probs,
                prompt_length=len(tree.calls[path[0]].prompt_token_ids),
                turn_ends=turn_ends,
                reward=reward,
                reward_components=components,
                step_rewards=[steps[index] for index in owned] if steps is not None else None,
                contiguity=Contiguity(True, len(path)),
                calls=owned,
                leaf=len(sequences),
                leaves=len(leaves),
                retokenized=len(tree.retokenized),
            )
        )
    return sequences

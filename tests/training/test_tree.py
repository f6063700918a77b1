"""Rollouts whose model calls form a tree, on hand-built responses (no model): compaction,
retries, sub-agents and re-tokenisation give one training sequence per leaf, every sampled
token trained exactly once and never a token the engine did not sample."""

from __future__ import annotations

from collections import Counter

import pytest

from palaestra.training.tokens import ContiguityError, TrainingSequence, training_sequence
from palaestra.training.tree import call_tree, training_sequences
from palaestra.types import JsonDict, Verdict


def _call(prompt: list[int], generated: list[int], **extra: int) -> JsonDict:
    return {
        "type": "message",
        "role": "assistant",
        "prompt_token_ids": prompt,
        "generation_token_ids": generated,
        "generation_log_probs": [-(g / 100) for g in generated],
        **extra,
    }


def _rollout(*items: JsonDict) -> JsonDict:
    return {"output": list(items)}


def _trained(sequences: list[TrainingSequence]) -> Counter[tuple[int, int]]:
    """(call's generated token, its log-prob x100) of every masked position, counted."""
    found: Counter[tuple[int, int]] = Counter()
    for sequence in sequences:
        for token, mask, log_prob in zip(
            sequence.token_ids, sequence.loss_mask, sequence.log_probs, strict=True
        ):
            if mask:
                assert round(-log_prob * 100) == token  # aligned with its own token
                found[(token, round(-log_prob * 100))] += 1
            else:
                assert log_prob == 0.0
    return found


def _sampled(response: JsonDict) -> Counter[tuple[int, int]]:
    return Counter(
        (token, token) for item in response["output"] for token in item["generation_token_ids"]
    )


def test_a_line_of_calls_is_one_leaf_and_exactly_todays_sequence() -> None:
    response = _rollout(
        _call([1, 2], [3]), _call([1, 2, 3, 4], [5, 6]), _call([1, 2, 3, 4, 5, 6, 7], [8])
    )
    verdict = Verdict(reward=1.0, step_rewards=[0.1, 0.2, 0.7])
    tree = call_tree(response)
    assert tree.parents == [None, 0, 1] and tree.leaves == [2] and tree.retokenized == []
    (sequence,) = training_sequences(response, verdict)
    assert sequence == training_sequence(response, verdict)
    assert sequence.calls == [0, 1, 2] and (sequence.leaf, sequence.leaves) == (0, 1)


def test_a_compacted_history_starts_a_new_root_and_each_branch_trains_its_own_calls() -> None:
    # Calls 0-1 are one line; call 2's prompt is a summary (the harness compacted): a new
    # root, continued by call 3.
    response = _rollout(
        _call([1, 2], [10, 11]),
        _call([1, 2, 10, 11, 3], [12]),
        _call([1, 9, 4], [13, 14]),
        _call([1, 9, 4, 13, 14, 5], [15]),
    )
    tree = call_tree(response)
    assert tree.parents == [None, 0, None, 2]
    assert tree.roots == [0, 2] and tree.leaves == [1, 3] and tree.branches == 2
    first, second = training_sequences(response, Verdict(reward=0.5))
    assert first.token_ids == [1, 2, 10, 11, 3, 12]
    assert first.loss_mask == [0, 0, 1, 1, 0, 1] and first.calls == [0, 1]
    assert second.token_ids == [1, 9, 4, 13, 14, 5, 15]
    assert second.loss_mask == [0, 0, 0, 1, 1, 0, 1] and second.calls == [2, 3]
    assert (first.prompt_length, second.prompt_length) == (2, 3)
    assert first.reward == second.reward == 0.5
    assert [(s.leaf, s.leaves) for s in (first, second)] == [(0, 2), (1, 2)]
    assert _trained([first, second]) == _sampled(response)


def test_a_retried_call_is_a_sibling_and_the_shared_ancestor_is_trained_in_the_last_leaf() -> None:
    # Call 1 and its retry (call 2) both continue call 0; call 3 continues the retry.
    response = _rollout(
        _call([1, 2], [10]),
        _call([1, 2, 10, 3], [11, 12]),
        _call([1, 2, 10, 3], [13]),
        _call([1, 2, 10, 3, 13, 4], [14]),
    )
    tree = call_tree(response)
    assert tree.parents == [None, 0, 0, 2] and tree.leaves == [1, 3]
    assert tree.path(3) == [0, 2, 3]
    verdict = Verdict(reward=1.0, step_rewards=[0.0, 0.1, 0.2, 0.3])
    first, second = training_sequences(response, verdict)
    # Call 0 is in both leaves' sequences; the last leaf (the branch the harness ended on)
    # trains it, the abandoned attempt reads it as context.
    assert first.token_ids == [1, 2, 10, 3, 11, 12]
    assert first.loss_mask == [0, 0, 0, 0, 1, 1] and first.calls == [1]
    assert second.token_ids == [1, 2, 10, 3, 13, 4, 14]
    assert second.loss_mask == [0, 0, 1, 0, 1, 0, 1] and second.calls == [0, 2, 3]
    assert (first.turn_ends, second.turn_ends) == ([5], [2, 4, 6])
    assert (first.step_rewards, second.step_rewards) == ([0.1], [0.0, 0.2, 0.3])
    assert _trained([first, second]) == _sampled(response)


def test_a_sub_agent_between_calls_of_the_main_line_does_not_break_it() -> None:
    # Calls 1 and 2 are a sub-agent with its own prompt; call 3 continues the main line.
    response = _rollout(
        _call([1, 2], [10]),
        _call([7, 8], [20]),
        _call([7, 8, 20, 9], [21]),
        _call([1, 2, 10, 3], [11]),
    )
    tree = call_tree(response)
    assert tree.parents == [None, None, 1, 0] and tree.leaves == [2, 3]
    sequences = training_sequences(response)
    assert [s.calls for s in sequences] == [[1, 2], [0, 3]]
    assert _trained(sequences) == _sampled(response)


def test_the_parent_is_the_longest_history_the_prompt_extends() -> None:
    # Call 1 (a retry of call 0 that stopped early) is a prefix of call 2's prompt, and so is
    # call 0, which is longer: call 2 continues call 0, the history it actually holds.
    response = _rollout(
        _call([1, 2], [10, 11]), _call([1, 2], [10]), _call([1, 2, 10, 11, 3], [12])
    )
    tree = call_tree(response)
    assert tree.parents == [None, None, 0] and tree.leaves == [1, 2]
    sequences = training_sequences(response)
    assert [s.calls for s in sequences] == [[1], [0, 2]]
    assert _trained(sequences) == _sampled(response)


def test_a_re_tokenised_call_is_counted_and_branches_instead_of_being_spliced() -> None:
    # The gateway says call 1 continues call 0, but its prompt re-tokenised call 0's
    # generation (10, 11 became 99): it must not be spliced onto call 0.
    response = _rollout(
        _call([1, 2], [10, 11], call_index=0),
        _call([1, 2, 99, 3], [12], call_index=1, call_parent=0),
        _call([1, 2, 99, 3, 12, 4], [13], call_index=2, call_parent=1),
    )
    tree = call_tree(response)
    assert tree.retokenized == [1] and tree.parents == [None, None, 1]
    first, second = training_sequences(response)
    assert first.token_ids == [1, 2, 10, 11] and first.loss_mask == [0, 0, 1, 1]
    # The re-tokenised 99 is context: the engine never sampled it.
    assert second.token_ids == [1, 2, 99, 3, 12, 4, 13]
    assert second.loss_mask == [0, 0, 0, 0, 1, 0, 1]
    assert first.retokenized == second.retokenized == 1
    assert _trained([first, second]) == _sampled(response)


def test_a_claimed_parent_is_read_through_the_gateways_own_call_numbers() -> None:
    # Gateway call 1 failed and carries no tokens: call_parent=2 names the third gateway
    # call, which is the second call with token ids.
    response = _rollout(
        _call([1], [10], call_index=0),
        _call([5], [11], call_index=2),
        _call([5, 11, 6], [12], call_index=3, call_parent=2),
        _call([1, 77], [13], call_index=4, call_parent=0),
    )
    tree = call_tree(response)
    assert tree.parents == [None, None, 1, None] and tree.retokenized == [3]


def test_a_claim_the_ids_honour_counts_nothing() -> None:
    response = _rollout(_call([1], [10], call_parent=5), _call([1, 10, 2], [11], call_parent=0))
    tree = call_tree(response)
    assert tree.retokenized == [] and tree.parents == [None, 0]


def test_a_tree_with_misaligned_step_rewards_or_a_non_policy_item_is_refused() -> None:
    response = _rollout(_call([1], [10]), _call([2], [11]))
    with pytest.raises(ContiguityError, match="1 step rewards for 2 model calls"):
        training_sequences(response, {"reward": 1.0, "step_rewards": [1.0]})
    with pytest.raises(ContiguityError, match="produced by 'user'"):
        training_sequences(response, producers=["policy", "user"])
    with pytest.raises(ContiguityError, match="no model call with token ids"):
        training_sequences(_rollout({"type": "message", "role": "assistant", "content": "x"}))

from __future__ import annotations

import math
from pathlib import Path

import orjson

from palaestra.collect.metrics import aggregate, pass_at_k


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    metrics = pass_at_k({0: [1.0, 0.0, 0.0, 0.0], 1: [0.0] * 4, 2: [1.0] * 4})
    assert math.isclose(metrics["pass@1"], (0.25 + 0 + 1) / 3)
    assert math.isclose(metrics["pass@4"], (1 + 0 + 1) / 3)


def test_aggregate_over_numeric_fields_per_agent(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    ref = {"type": "responses_api_agents", "name": "a"}
    rows = [
        {
            "_ng_task_index": 0,
            "_ng_rollout_index": 0,
            "agent_ref": ref,
            "reward": 1.0,
            "hit": True,
            "note": "x",
            "response": {"usage": {"input_tokens": 10}},
        },
        {
            "_ng_task_index": 0,
            "_ng_rollout_index": 1,
            "agent_ref": ref,
            "reward": 0.0,
            "hit": False,
            "note": "y",
            "response": {"usage": {"input_tokens": 30}},
        },
    ]
    out.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    failures = tmp_path / "fail.jsonl"
    failures.write_text('{"failure": {"kind": "timeout"}}\n')
    [entry] = aggregate(out, failures)
    assert entry["agent_ref"] == ref
    assert entry["agent_metrics"]["mean/reward"] == 0.5
    assert entry["agent_metrics"]["std/reward"] == 0.5
    assert entry["agent_metrics"]["mean/hit"] == 0.5
    assert entry["agent_metrics"]["max/usage/input_tokens"] == 30
    assert "mean/note" not in entry["agent_metrics"]
    assert entry["key_metrics"]["pass@2"] == 1.0
    assert entry["key_metrics"]["failures"] == 1
    assert entry["group_level_metrics"] == [
        {"_ng_task_index": 0, "rollouts": 2, "mean/reward": 0.5}
    ]


def test_majority_at_k_votes_on_extracted_answers() -> None:
    from palaestra.collect.metrics import majority_at_k

    rewards = {0: [1.0, 0.0, 0.0], 1: [1.0, 0.0, 0.0], 2: [0.0, 0.0, 0.0]}
    answers = {
        0: [("42", 1.0), ("41", 0.0), ("42", 0.0)],  # the majority answer was once scored right
        1: [("7", 1.0), ("8", 0.0), ("8", 0.0)],  # the majority is wrong
        2: [],  # no answers: no vote
    }
    assert majority_at_k(rewards, answers) == {"majority@3": 1 / 3}
    assert majority_at_k(rewards, {}) == {}

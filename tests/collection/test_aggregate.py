from __future__ import annotations

import math
from pathlib import Path

import orjson

from palaestra.collection.aggregate import aggregate
from palaestra.environment.estimators import mean_pass_at_k as pass_at_k


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
    assert math.isclose(entry["agent_metrics"]["std/reward"], math.sqrt(0.5))  # sample std
    assert entry["agent_metrics"]["mean/hit"] == 0.5
    assert entry["agent_metrics"]["max/input_tokens"] == 30  # NeMo Gym's name
    assert entry["agent_metrics"]["median/input_tokens"] == 20
    assert "mean/note" not in entry["agent_metrics"]
    assert entry["key_metrics"]["pass@2"] == 1.0
    assert entry["key_metrics"]["failures"] == 1
    assert entry["group_level_metrics"] == [
        {"_ng_task_index": 0, "num_rollouts": 2, "mean/reward": 0.5}
    ]


def test_majority_at_k_votes_on_extracted_answers() -> None:
    from palaestra.collection.aggregate import majority_at_k

    rewards = {0: [1.0, 0.0, 0.0], 1: [1.0, 0.0, 0.0], 2: [0.0, 0.0, 0.0]}
    answers = {
        0: [("42", 1.0), ("41", 0.0), ("42", 0.0)],  # the majority answer was once scored right
        1: [("7", 1.0), ("8", 0.0), ("8", 0.0)],  # the majority is wrong
        2: [],  # no answers: no vote
    }
    assert majority_at_k(rewards, answers) == {"majority@3": 1 / 3}
    assert majority_at_k(rewards, {}) == {}


def test_written_aggregate_streams_groups_and_matches_aggregate(tmp_path: Path) -> None:
    from palaestra.collection.aggregate import write_aggregate

    out = tmp_path / "out.jsonl"
    rows = []
    # dense task indices, one far beyond them and a negative one (kept aside, still counted)
    for task, rewards in {2: [1.0, 0.0], 0: [1.0], 10_000_000: [0.5, 0.5], -1: [0.0]}.items():
        for rollout, reward in enumerate(rewards):
            rows.append({"_ng_task_index": task, "_ng_rollout_index": rollout, "reward": reward})
    out.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    failures = tmp_path / "fail.jsonl"
    failures.write_text('{"failure": {"kind": "timeout"}}\n')
    path = tmp_path / "metrics.json"
    entries = write_aggregate(out, failures, path)
    written = orjson.loads(path.read_bytes())
    assert written == aggregate(out, failures)
    assert [g["_ng_task_index"] for g in written[0]["group_level_metrics"]] == [
        -1,
        0,
        2,
        10_000_000,
    ]
    assert written[0]["group_level_metrics"][-1] == {
        "_ng_task_index": 10_000_000,
        "num_rollouts": 2,
        "mean/reward": 0.5,
    }
    assert written[0]["key_metrics"]["tasks"] == 4 and written[0]["key_metrics"]["rollouts"] == 6
    assert entries == [{k: v for k, v in written[0].items() if k != "group_level_metrics"}]


def test_written_aggregate_of_failures_only_and_of_nothing(tmp_path: Path) -> None:
    from palaestra.collection.aggregate import write_aggregate

    out, failures, path = tmp_path / "out.jsonl", tmp_path / "fail.jsonl", tmp_path / "m.json"
    out.write_text("")
    failures.write_text('{"failure": {"kind": "model_error"}}\n')
    write_aggregate(out, failures, path)
    assert orjson.loads(path.read_bytes()) == aggregate(out, failures)
    failures.unlink()
    assert write_aggregate(out, failures, path) == []
    assert orjson.loads(path.read_bytes()) == []


def test_key_metrics_hold_every_mean_as_nemo_gym_s_default_does(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    rows = [
        {
            "_ng_task_index": task,
            "_ng_rollout_index": 0,
            "reward": float(task % 2),
            "hit": task % 2 == 1,
            "response": {"usage": {"input_tokens": 10 * task, "output_tokens": 3}},
        }
        for task in range(5)
    ]
    out.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    [entry] = aggregate(out, tmp_path / "none.jsonl")
    means = {k: v for k, v in entry["agent_metrics"].items() if k.startswith("mean/")}
    assert set(means) == {"mean/reward", "mean/hit", "mean/input_tokens", "mean/output_tokens"}
    assert means.items() <= entry["key_metrics"].items()  # before: only mean/reward
    assert entry["agent_metrics"]["median/input_tokens"] == 20
    assert entry["agent_metrics"]["median/reward"] == 0.0


def test_the_median_is_pandas_median_and_stays_within_a_bounded_memory() -> None:
    from palaestra.collection.aggregate import RunningStat

    stat = RunningStat()
    for value in (3.0, 1.0, 4.0, 1.0, 5.0, 9.0):
        stat.add(value)
    assert stat.median == 3.5 and stat.values()["median"] == 3.5  # the two middle values' mean
    stat.add(2.0)
    assert stat.median == 3.0
    wide = RunningStat()
    values = [1.0 + i / 200_000 for i in range(200_000)]  # 200,000 distinct values
    for value in values:
        wide.add(value)
    assert len(wide.counts) <= 1 << 16
    exact = (values[99_999] + values[100_000]) / 2
    assert abs(wide.median - exact) / exact < 1e-3

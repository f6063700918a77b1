"""The reward files read as Harbor reads them; what cannot be read is an error, never a 0."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from palaestra.environment.kinds.harbor.boxes import read_in_box
from palaestra.environment.kinds.harbor.rewards import (
    Reward,
    RewardProblem,
    RewardRefused,
    read_reward,
)
from palaestra.types import FailureKind


def files(**given: str) -> Reward:
    contents = {name.replace("_", "."): text.encode() for name, text in given.items()}
    return read_reward(contents.get)


def test_reward_txt_is_one_number() -> None:
    assert files(reward_txt="1\n") == Reward(1.0, {"reward": 1.0}, "reward.txt")
    assert files(reward_txt=" 0.25 ").reward == 0.25


def test_reward_json_keeps_every_component_a_boolean_as_a_number() -> None:
    got = files(reward_json='{"reward": 0.5, "passed": 3, "ok": true, "failed": false}')
    assert got.reward == 0.5
    assert got.components == {"reward": 0.5, "passed": 3.0, "ok": 1.0, "failed": 0.0}
    assert got.source == "reward.json"


@pytest.mark.parametrize("value", ['"x"', "null", "[1]", '{"a": 1}', '"1"'])
def test_a_reward_json_value_that_is_no_number_is_refused_naming_the_key(value: str) -> None:
    with pytest.raises(RewardRefused) as refused:
        read_reward({"reward.json": f'{{"reward": 1, "note": {value}}}'.encode()}.get, "/x.json")
    assert str(refused.value).startswith("/x.json: key 'note' is ")
    assert "not a number" in str(refused.value)
    assert refused.value.kind is FailureKind.VERIFIER_ERROR
    assert "\n" not in str(refused.value)


def test_reward_json_wins_over_reward_txt() -> None:
    assert files(reward_json='{"reward": 1}', reward_txt="0").reward == 1.0


def test_reward_txt_beside_a_reward_json_without_reward_is_ignored_as_harbor_ignores_it() -> None:
    got = files(reward_json='{"exists": 1}', reward_txt="0")
    assert got == Reward(1.0, {"exists": 1.0}, "reward.json")
    with pytest.raises(RewardProblem, match="no 'reward' key and 2 numeric components"):
        files(reward_json='{"accuracy": 0.5, "f1": 0.25}', reward_txt="0.75")


def test_a_single_component_is_the_reward() -> None:
    assert files(reward_json='{"score": 0.4}').reward == 0.4


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({}, "wrote no reward"),
        ({"reward_txt": ""}, "reward.txt is empty"),
        ({"reward_txt": "pass"}, "reward.txt is not a number: 'pass'"),
        ({"reward_txt": "nan"}, "not a finite number"),
        ({"reward_json": "[1]"}, "must be a JSON object, not list"),
        ({"reward_json": "{"}, "not valid JSON"),
        ({"reward_json": "  "}, "reward.json is empty"),
        ({"reward_json": '{"a": 1, "b": 0}'}, "no 'reward' key and 2 numeric components (a, b)"),
        ({"reward_json": "{}"}, "no 'reward' key and 0 numeric components"),
        ({"reward_json": '{"reward": 1e999}'}, "not a finite number"),
        ({"reward_json": '{"reward": 1' + "0" * 400 + "}"}, "not a finite number"),
    ],
)
def test_what_cannot_be_read_is_a_problem(given: dict[str, str], said: str) -> None:
    with pytest.raises(RewardProblem, match=said.replace("(", r"\(").replace(")", r"\)")):
        files(**given)


def test_read_in_box_never_follows_a_symlink(tmp_path: Path) -> None:
    root = tmp_path / "box"
    (root / "logs" / "verifier").mkdir(parents=True)
    (root / "logs" / "verifier" / "reward.txt").write_text("1")
    assert read_in_box(root, "/logs/verifier/reward.txt") == b"1"
    assert read_in_box(root, "/logs/verifier/reward.json") is None
    secret = tmp_path / "host-secret"
    secret.write_text("0.5")
    os.symlink(secret, root / "logs" / "verifier" / "reward.json")
    assert read_in_box(root, "/logs/verifier/reward.json") is None
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "verifier").mkdir(parents=True)
    (elsewhere / "verifier" / "reward.txt").write_text("1")
    os.rename(root / "logs", tmp_path / "old-logs")
    os.symlink(elsewhere, root / "logs")
    assert read_in_box(root, "/logs/verifier/reward.txt") is None
    (root / "logs").unlink()
    (root / "logs" / "verifier").mkdir(parents=True)
    os.mkfifo(root / "logs" / "verifier" / "reward.txt")
    assert read_in_box(root, "/logs/verifier/reward.txt") is None

"""A durable rollout's checkpoints as written turn by turn (``encoded_checkpoint``), and the
whole checkpoint they make (``folded``)."""

from __future__ import annotations

import orjson

from palaestra.agents.durable import Durability, checkpoint_of, encoded_checkpoint, folded
from palaestra.types import AgentResult, JsonDict


def test_checkpoints_written_turn_by_turn_fold_into_the_whole_rollout() -> None:
    durable = Durability(save=lambda checkpoint: True)
    result = AgentResult(producers=[])
    outputs: list[JsonDict] = []
    written: list[JsonDict] = []
    for turn in range(3):
        outputs += [
            {"type": "function_call", "call_id": f"c{turn}", "prompt_token_ids": [1, 2, turn]},
            {"type": "function_call_output", "call_id": f"c{turn}", "output": "ok"},
        ]
        result.model_calls = result.tool_calls = turn + 1
        result.producers = ["policy", "tool"] * (turn + 1)
        result.response = {"output": list(outputs), "usage": {"n": turn}}
        state = {"seq": turn}
        written.append(orjson.loads(encoded_checkpoint(durable, result, state, {"x": [turn]})))
        assert written[-1]["items"] == outputs[-2:]  # the turn's items only
        assert folded(written) == {**checkpoint_of(result, state), "x": [turn]}


def test_a_checkpoint_of_another_trajectory_is_written_whole() -> None:
    durable = Durability(save=lambda checkpoint: True)
    result = AgentResult(producers=["policy", "tool"], model_calls=1, tool_calls=1)
    result.response = {"output": [{"type": "a"}, {"type": "b"}], "usage": None}
    first = orjson.loads(encoded_checkpoint(durable, result, {}, None))
    result.producers, result.response = ["policy"], {"output": [{"type": "c"}], "usage": None}
    second = orjson.loads(encoded_checkpoint(durable, result, {}, None))
    assert second["items"] == [{"type": "c"}]
    assert folded([first, second]) == checkpoint_of(result, {})


def test_a_checkpoint_after_a_lost_one_is_not_resumed_from() -> None:
    durable = Durability(save=lambda checkpoint: True)
    result = AgentResult(producers=[], model_calls=0)
    parts = []
    for turn in range(3):
        result.model_calls = turn
        result.producers = ["policy"] * (turn + 1)
        result.response = {"output": [{"n": n} for n in range(turn + 1)], "usage": None}
        parts.append(orjson.loads(encoded_checkpoint(durable, result, {"turn": turn}, None)))
    whole = folded([parts[0], parts[2]])  # the second never reached the file
    assert whole is not None and whole["env_state"] == {"turn": 0}
    assert whole["response"]["output"] == [{"n": 0}]

"""A durable rollout's checkpoint as encoded turn by turn (``encoded_checkpoint``)."""

from __future__ import annotations

import orjson
import pytest

from palaestra.agents import durable as durable_module
from palaestra.agents.durable import Durability, checkpoint_of, encoded_checkpoint
from palaestra.types import AgentResult


@pytest.mark.parametrize("spliced_max", [durable_module.SPLICED_MAX, 0])
def test_a_checkpoint_encoded_turn_by_turn_reads_as_the_whole_rollout(
    spliced_max: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both layouts: the items spliced into one dumps (short), and joined around (long).
    monkeypatch.setattr(durable_module, "SPLICED_MAX", spliced_max)
    durable = Durability(save=lambda checkpoint: True)
    result = AgentResult(producers=[])
    outputs: list[dict[str, object]] = []
    for turn in range(3):
        outputs += [
            {"type": "function_call", "call_id": f"c{turn}", "prompt_token_ids": [1, 2, turn]},
            {"type": "function_call_output", "call_id": f"c{turn}", "output": "ok"},
        ]
        result.model_calls = result.tool_calls = turn + 1
        result.producers = ["policy", "tool"] * (turn + 1)
        result.response = {"id": f"r{turn}", "output": list(outputs), "usage": {"n": turn}}
        state = {"seq": turn}
        line = encoded_checkpoint(durable, result, state, {"step_rewards": [0.5]})
        expected = {**checkpoint_of(result, state), "step_rewards": [0.5]}
        assert orjson.loads(line) == expected
    assert len(durable.encoded) == len(outputs)  # each item encoded once, then reused

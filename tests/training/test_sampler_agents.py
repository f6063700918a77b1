"""``RolloutSampler`` closes what its agent serves (a harness agent's gateway) when it closes."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from palaestra.training import RolloutSampler
from tests.agents.test_command import CALL, FinalAnswer, _model

ASKS = CALL + "\nprint(ask([{'role': 'user', 'content': instruction}]))\n"


async def test_a_sampler_with_a_harness_agent_closes_its_gateway_when_it_closes(
    tmp_path: Path,
) -> None:
    script = tmp_path / "asks.py"
    script.write_text(ASKS)
    cmd = f"{sys.executable} {script} {{base_url}} {{api_key}} {{instruction}}"
    task = {"responses_create_params": {"input": "Six times seven?"}}
    model = _model()
    async with RolloutSampler(
        FinalAnswer(), tasks=[task], group_size=1, policy=model,
        agent="command", agent_options={"cmd": cmd},
    ) as sampler:  # fmt: skip
        (group,) = await sampler.batch()
        gateway = await sampler._agent.gateway(model)  # type: ignore[union-attr]
    rollout = group.rollouts[0]
    assert rollout.response is not None  # the harness ran, through the gateway (the fake
    # model gives no token ids: the sampler masks it, which is not what is tested here)
    assert [i["producer"] for i in rollout.response["output"]] == ["environment", "policy"]
    host, port = gateway.url.removeprefix("http://").split(":")
    with pytest.raises(OSError):  # closed with the sampler
        _, writer = await asyncio.open_connection(host, int(port))
        writer.close()

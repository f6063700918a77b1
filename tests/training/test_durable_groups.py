"""``RolloutSampler(checkpoints=...)``: a trainer stopped mid-batch and started again continues
the durable rollouts of its streaming groups from their last completed turn, token-exact."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from pathlib import Path

import orjson

from palaestra.training import RolloutSampler
from tests.support.durable_ledger import DurableLedger, ledger_lines, ledger_script
from tests.support.scripted_model import ScriptedModelServer
from tests.support.toy_tokenizer import ToyTokenizer

TASKS, SAMPLES, TURNS = 2, 2, 4
"""Three rollouts in flight: group 1's second sample starts when a first rollout finished."""


def tasks(ledger: Path) -> list[dict[str, object]]:
    return [
        {
            "responses_create_params": {
                "input": [{"role": "user", "content": f"Deposit 1 up to {TURNS}"}]
            },
            "ledger": str(ledger),
            "turns": TURNS,
        }
        for _ in range(TASKS)
    ]


async def test_a_restarted_trainer_continues_its_groups_durable_rollouts(tmp_path: Path) -> None:
    ledger, checkpoints = tmp_path / "ledger.jsonl", tmp_path / "groups.jsonl"
    options = {
        "tasks": tasks(ledger),
        "group_size": SAMPLES,
        "agent_options": {"max_steps": 20},
        "checkpoints": checkpoints,
        "concurrency": 3,
    }
    script = ledger_script(delay=0.15)
    with ScriptedModelServer(script, api="chat", tokenizer=ToyTokenizer()) as server:
        async with RolloutSampler(DurableLedger, policy=server.url, **options) as first:
            batch = asyncio.create_task(first.batch())
            for _ in range(1500):  # until the last rollout has made two deposits or more
                deposits = Counter((r["task"], r["rollout"]) for r in ledger_lines(ledger))
                if deposits[1, 1] >= 2:
                    break
                assert not batch.done(), batch.result()
                await asyncio.sleep(0.02)
            batch.cancel()  # the trainer stops mid-batch
            with contextlib.suppress(asyncio.CancelledError):
                await batch
        saved = [orjson.loads(line) for line in checkpoints.read_bytes().splitlines()]
        assert len(saved) == TASKS * SAMPLES  # the finished ones too: no group was handed over
        finished = [entry for entry in saved if "result" in entry["checkpoint"]]
        assert len(finished) == 3  # group 0 whole, and group 1's first sample
        before = len([r for r in server.requests if r[0].endswith("/completions")])
        async with RolloutSampler(DurableLedger, policy=server.url, **options) as second:
            groups = await second.batch()  # the same plan: groups 0.. again
        calls = len([r for r in server.requests if r[0].endswith("/completions")]) - before
    (unfinished,) = [entry for entry in saved if "result" not in entry["checkpoint"]]
    assert unfinished["checkpoint"]["turn"] >= 2
    assert calls == TURNS + 1 - unfinished["checkpoint"]["turn"]  # nothing done is redone
    for group in groups:
        assert len(group.rollouts) == SAMPLES and not group.failures
        for rollout in group.rollouts:
            assert rollout.reward == 1.0 and rollout.failure is None  # tokens contiguous
            assert sum(rollout.loss_mask) > 0
    each = Counter((r["task"], r["rollout"], r["seq"]) for r in ledger_lines(ledger))
    expected = {(t, s, n): 1 for t in range(TASKS) for s in range(SAMPLES) for n in range(TURNS)}
    assert each == Counter(expected)
    assert not checkpoints.exists()  # every rollout finished

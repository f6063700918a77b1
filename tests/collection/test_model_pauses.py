"""A run whose model pauses for a weight update mid-run loses no rollout, spends no retry, and
says in its summary how many requests waited and how long.

The model is a real HTTP server on loopback that answers 503 with ``Retry-After`` while paused.
"""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

import palaestra
from palaestra.cli.progress import summary_table
from palaestra.spec import ModelConfig
from palaestra.wire.rows import ROLLOUT_INDEX, TASK_INDEX
from tests.cli.test_collect_cli import rows, weather_script
from tests.collection.test_model_timeouts import city_tasks
from tests.support.pausing_model import Pausing
from tests.support.scripted_model import ScriptedModelServer


def test_a_run_through_a_pause_loses_nothing_and_counts_the_wait(tmp_path: Path) -> None:
    tasks = city_tasks(tmp_path / "tasks.jsonl", 12)
    output = tmp_path / "out.jsonl"
    script = Pausing(weather_script(), "503", retry_after=0.3, pause_at=(5, 1.5))
    with ScriptedModelServer(script) as server:
        config = ModelConfig(url=server.url, max_retries=0)  # no retry budget at all
        summary = palaestra.collect(
            env="weather", model=config, input=tasks, output=output, concurrency=4
        )
    assert summary.stopped_reason is None and not summary.failures
    pairs = sorted((row[TASK_INDEX], row[ROLLOUT_INDEX]) for row in rows(output))
    assert pairs == [(task, 0) for task in range(12)]
    assert script.paused_answers >= 4
    assert summary.paused_calls >= 4 and summary.paused_seconds >= 1.0
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(summary_table(summary, 1.0))
    shown = console.export_text()
    assert f"{summary.paused_calls} requests met a weight-update pause" in shown
    assert "(no retries spent)" in shown

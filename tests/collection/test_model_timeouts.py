"""A model that takes requests and never answers stops the run (resumable) after a few calls
time out in a row; timeouts between answered calls never do.

The model is a real HTTP server on loopback: it answers ``GET /v1/models`` (the run's check
passes, as a wedged vLLM's front end does) and holds every completion request open.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import orjson

import palaestra
from palaestra.models.openai.endpoint import TIMEOUTS_TO_STOP
from palaestra.spec import ModelConfig
from palaestra.types import JsonDict
from palaestra.wire.rows import ROLLOUT_INDEX, TASK_INDEX
from tests.cli.test_collect_cli import rows, weather_script
from tests.support.scripted_model import ScriptedFault, ScriptedModelServer, text_response

NEVER = ScriptedFault(status=200, body=text_response("too late"), delay=3600)
"""An answer held for an hour: the client's read timeout ends the wait, never the server."""


def city_tasks(path: Path, count: int) -> Path:
    lines = [
        orjson.dumps({"responses_create_params": {"input": f"Weather in city {index}?"}})
        for index in range(count)
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def impatient(url: str) -> ModelConfig:
    """A model config whose calls give up after 0.3 s, with one retry (and no allowance for
    a request held during a weight-update pause)."""
    return ModelConfig(url=url, request_timeout=0.3, max_retries=1, retry_delay=0, pause_deadline=0)


def test_a_model_that_never_answers_stops_the_run_and_a_resume_finishes_it(
    tmp_path: Path,
) -> None:
    tasks = city_tasks(tmp_path / "tasks.jsonl", 40)
    output = tmp_path / "out.jsonl"
    with ScriptedModelServer(lambda params: NEVER) as hung:
        port = hung.port
        stopped = palaestra.collect(
            env="weather", model=impatient(hung.url), input=tasks, output=output, concurrency=2
        )
        held = len(hung.bodies("/v1/responses"))
    assert stopped.stopped_reason is not None
    expected = rf"^model timed out \d+ times in a row: http://127\.0\.0\.1:{port}/v1 "
    assert re.match(expected, stopped.stopped_reason), stopped.stopped_reason
    # Stopped early: the rollouts in flight when the count was reached, not all 40.
    failed = sum(stopped.failures.values())
    assert stopped.done == 0 and TIMEOUTS_TO_STOP <= failed <= TIMEOUTS_TO_STOP + 2
    assert set(stopped.failures) == {"timeout"}
    assert held == failed * 2  # each call waited out its timeout twice (one retry), no more

    with ScriptedModelServer(weather_script(), port=port) as back:
        resumed = palaestra.collect(
            env="weather", model=impatient(back.url), input=tasks, output=output, resume=True
        )
    assert resumed.stopped_reason is None and not resumed.failures
    pairs = sorted((row[TASK_INDEX], row[ROLLOUT_INDEX]) for row in rows(output))
    assert pairs == [(task, 0) for task in range(40)]


def test_timeouts_between_answered_calls_never_stop_the_run(tmp_path: Path) -> None:
    hanging = {3, 4, 9, 10, 15}  # never TIMEOUTS_TO_STOP in a row: answers come between
    weather = weather_script()
    seen: list[int] = []
    lock = threading.Lock()

    def script(params: JsonDict) -> JsonDict | ScriptedFault:
        task = int(re.findall(r"city (\d+)", str(params["input"]))[0])
        with lock:
            first = task not in seen
            seen.append(task)
        return NEVER if task in hanging and first else weather(params)

    tasks = city_tasks(tmp_path / "tasks.jsonl", 20)
    output = tmp_path / "out.jsonl"
    with ScriptedModelServer(script) as server:
        config = ModelConfig(url=server.url, request_timeout=0.3, max_retries=0, pause_deadline=0)
        summary = palaestra.collect(
            env="weather", model=config, input=tasks, output=output, concurrency=1
        )
    assert summary.stopped_reason is None
    assert summary.failures == {"timeout": len(hanging)}
    assert summary.done == 20 - len(hanging)

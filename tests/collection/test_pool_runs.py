"""A run over a pool of model endpoints: one is stopped mid-run and nothing is lost; the rows,
the summary and the aggregate file say where the calls went; a resume may change the replicas.

Every endpoint is a real scripted OpenAI-compatible server; the stopped one is really stopped
(its in-flight call cut, later connections refused).
"""

from __future__ import annotations

import threading
from pathlib import Path

import orjson
import pytest

import palaestra
from palaestra.errors import ConfigError
from palaestra.spec import ModelConfig
from palaestra.types import JsonDict
from palaestra.wire.rows import ROLLOUT_INDEX, TASK_INDEX
from tests.cli.test_collect_cli import rows, weather_script
from tests.support.scripted_model import ScriptedFault, ScriptedModelServer, text_response

RESPONSES = "/v1/responses"


def city_tasks(path: Path, count: int) -> Path:
    lines = [
        orjson.dumps({"responses_create_params": {"input": f"Weather in city {index}?"}})
        for index in range(count)
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_an_endpoint_stopped_mid_run_loses_no_rollout_and_the_counts_add_up(
    tmp_path: Path,
) -> None:
    weather = weather_script()
    cut = threading.Event()

    def dying(params: JsonDict) -> JsonDict | ScriptedFault:
        answered = "function_call_output" in str(params["input"])
        if answered and not cut.is_set():  # a rollout's second call: held until the stop
            cut.set()
            return ScriptedFault(status=200, body=text_response("late"), delay=30)
        return weather(params)

    tasks = city_tasks(tmp_path / "tasks.jsonl", 6)
    output = tmp_path / "runs" / "pool.jsonl"
    with ScriptedModelServer(weather) as alive, ScriptedModelServer(dying) as doomed:

        def stop_the_doomed_one() -> None:
            cut.wait(30)
            doomed.__exit__(None, None, None)

        killer = threading.Thread(target=stop_the_doomed_one)
        killer.start()
        # The held call is cut by the stop; if the server was stopped as it accepted the call
        # (the socket accepted, never read), the request timeout moves it instead of 1200 s.
        model = ModelConfig(urls=[doomed.url, alive.url], request_timeout=20, pause_deadline=0)
        summary = palaestra.collect(
            env="weather",
            model=model,
            input=tasks,
            output=output,
            repeats=2,
            concurrency=4,
        )
        killer.join()
        alive_calls = len(alive.bodies(RESPONSES))
    assert cut.is_set()

    scored = rows(output)
    pairs = sorted((row[TASK_INDEX], row[ROLLOUT_INDEX]) for row in scored)
    assert pairs == [(task, rollout) for task in range(6) for rollout in range(2)]
    assert not summary.failures and summary.stopped_reason is None
    moved = [row["_palaestra"] for row in scored if row["_palaestra"].get("endpoint_moves")]
    assert {"endpoints": [doomed.url, alive.url], "endpoint_moves": 1}.items() <= moved[0].items()
    assert all(len(row["_palaestra"]["endpoints"]) in (1, 2) for row in scored)

    by_url = {entry["url"]: entry for entry in summary.endpoints}
    assert set(by_url) == {doomed.url, alive.url}
    assert by_url[doomed.url]["removed"] == 1 and not by_url[doomed.url]["healthy"]
    assert by_url[alive.url]["calls"] == alive_calls and by_url[alive.url]["failures"] == 0
    calls = sum(entry["calls"] for entry in summary.endpoints)
    retries = sum(entry["retries"] for entry in summary.endpoints)
    failures = sum(entry["failures"] for entry in summary.endpoints)
    assert failures == retries >= 1  # every failed call was retried, and the retry answered
    assert calls - retries == sum(row["_palaestra"]["model_calls"] for row in scored)
    [entry] = orjson.loads((tmp_path / "runs" / "pool_aggregate_metrics.json").read_bytes())
    assert entry["model_endpoints"] == summary.endpoints
    assert entry["key_metrics"]["mean/reward"] == 1.0  # the NeMo Gym entry is whole beside it


def test_a_resume_may_change_the_replicas_of_a_pool_but_not_leave_it(tmp_path: Path) -> None:
    tasks = city_tasks(tmp_path / "tasks.jsonl", 2)
    output = tmp_path / "out.jsonl"
    with (
        ScriptedModelServer(weather_script()) as a,
        ScriptedModelServer(weather_script()) as b,
        ScriptedModelServer(weather_script()) as c,
    ):
        first = palaestra.collect(env="weather", model=[a.url, b.url], input=tasks, output=output)
        more = palaestra.collect(
            env="weather", model=[a.url, b.url, c.url], input=tasks, output=output, resume=True
        )
        with pytest.raises(ConfigError, match=r"model\.url"):
            palaestra.collect(env="weather", model=a.url, input=tasks, output=output, resume=True)
    assert (first.done, more.skipped, more.done) == (2, 2, 0)
    recorded = orjson.loads((tmp_path / "out_run.json").read_bytes())
    assert recorded["model"]["urls"] == [a.url, b.url, c.url]
    assert recorded["spec"]["model"]["urls"] == [a.url, b.url, c.url]


@pytest.mark.parametrize(
    "garbage",
    [
        ScriptedFault(status=200, raw_body=b"<html>upstream says hello</html>"),
        ScriptedFault(status=200, body={"id": "resp_1", "status": "completed", "output": []}),
    ],
    ids=["invalid-json", "empty-output"],
)
def test_a_replica_that_answers_garbage_fast_is_taken_out_and_its_rollouts_move(
    tmp_path: Path, garbage: ScriptedFault
) -> None:
    tasks = city_tasks(tmp_path / "tasks.jsonl", 60)
    output = tmp_path / "out.jsonl"
    with (
        ScriptedModelServer(lambda params: garbage) as broken,
        ScriptedModelServer(weather_script()) as good,
    ):
        # The probe that would put the broken replica back on probation waits 30 s: longer
        # than the run, so it is still out at the end. Moving a call costs no wait.
        model = ModelConfig(urls=[broken.url, good.url], retry_delay=30, max_retry_delay=60)
        summary = palaestra.collect(
            env="weather", model=model, input=tasks, output=output, concurrency=16
        )
        broken_calls = len(broken.bodies(RESPONSES))
    assert summary.stopped_reason is None
    assert summary.done >= 57, summary.failures  # nearly all: every failed call moved
    by_url = {entry["url"]: entry for entry in summary.endpoints}
    assert by_url[broken.url]["removed"] >= 1 and not by_url[broken.url]["healthy"]
    assert by_url[broken.url]["calls"] == by_url[broken.url]["failures"] == broken_calls
    assert broken_calls <= 16  # the calls in flight when it was taken out, no more
    assert by_url[good.url]["failures"] == 0

"""The rows palaestra writes, checked by NeMo Gym 0.4's own schema classes, resume and aggregate.

A real ``palaestra collect`` run (a scripted model, the weather environment, one task whose
model calls fail) writes its four files; a served environment answers ``/verify``. The peer
script (NeMo Gym's venv) validates every output row as NeMo Gym's ``BaseVerifyResponse`` and
its ``Response`` field by field, the failure rows' classes, the aggregate as its
``AggregateMetrics``, reads the run with NeMo Gym's resume, and aggregates the same rows with
NeMo Gym's ``compute_aggregate_metrics`` so the names and values can be compared.
"""

from __future__ import annotations

import math
import urllib.request
from pathlib import Path
from typing import Any

import orjson

from palaestra import Environment, Session, Verdict
from palaestra.envs.weather.environment import Weather
from palaestra.http.runner import BackgroundServer
from palaestra.serve.env_app import environment_app
from palaestra.types import JsonDict
from palaestra.wire.protocol import SEED_SESSION, SESSION_HEADER, VERIFY
from tests.cli.test_collect_cli import run_cli, weather_script
from tests.interop.peer_run import run_peer
from tests.support.scripted_model import ScriptedFault, ScriptedModelServer

_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _post(url: str, body: JsonDict, token: str | None = None) -> tuple[dict[str, str], Any]:
    headers = {"Content-Type": "application/json", **({SESSION_HEADER: token} if token else {})}
    request = urllib.request.Request(url, orjson.dumps(body), headers, method="POST")
    with _DIRECT.open(request, timeout=30) as answer:
        return dict(answer.headers), orjson.loads(answer.read())


def _verify_in_a_session(base: str, row: JsonDict) -> Any:
    task = {k: v for k, v in row.items() if k != "response"}
    headers, _ = _post(f"{base}{SEED_SESSION}", task)
    token = {k.lower(): v for k, v in headers.items()}[SESSION_HEADER]
    return _post(f"{base}{VERIFY}", row, token)[1]


class Unscorable(Environment):
    def verify(self, session: Session, response: JsonDict) -> Verdict:
        raise ValueError("the verifier has a bug")


def test_the_rows_palaestra_writes_are_nemo_gym_s_own(tmp_path: Path) -> None:
    scripted = weather_script()

    def script(params: JsonDict) -> JsonDict | ScriptedFault:
        if "Oslo" in str(params["input"]):  # this task's model calls fail: failure rows
            return ScriptedFault(status=400, body={"error": {"message": "bad request"}})
        return scripted(params)

    tasks = [
        {"responses_create_params": {"input": f"Weather in {city}?", "temperature": 0.5}}
        for city in ("Paris", "Rome", "Oslo")
    ]
    (tmp_path / "tasks.jsonl").write_bytes(b"".join(orjson.dumps(t) + b"\n" for t in tasks))
    # Two endpoints (a pool): the aggregate then carries their counts beside NeMo Gym's fields.
    with ScriptedModelServer(script) as model, ScriptedModelServer(script) as replica:
        done = run_cli(
            "collect",
            "--env",
            "weather",
            "--model",
            model.url,
            "--model",
            replica.url,
            "--input",
            "tasks.jsonl",
            "--output",
            "w.jsonl",
            "--repeats",
            "2",
            cwd=tmp_path,
        )
    assert done.returncode in (0, 4), done.stderr  # 4: some rollouts failed, as scripted
    output = tmp_path / "w.jsonl"
    scored = [orjson.loads(line) for line in output.read_bytes().splitlines()]
    assert len(scored) == 4

    with (
        BackgroundServer(environment_app(Weather())) as weather,
        BackgroundServer(environment_app(Unscorable())) as unscorable,
    ):
        answers = [_verify_in_a_session(weather.url, row) for row in scored[:2]]
        failed = _verify_in_a_session(unscorable.url, scored[0])
    assert failed["failure"]["kind"] == "verifier_error"

    out = run_peer(
        "nemo-gym",
        "nemo_gym_schema.py",
        {"output": str(output), "verify_answers": answers, "verify_failure": failed},
        cwd=tmp_path,
    )
    assert out["problems"] == []
    assert out["resume"] == {"to_run": 2, "done": 4}  # the failures are retried by NeMo Gym
    [ours] = out["our_aggregate"]
    assert [e["url"] for e in ours["model_endpoints"]] == [model.url, replica.url]
    theirs = out["their_agent_metrics"]
    names = {"reward", "called_tool", "input_tokens", "output_tokens", "total_tokens"}
    assert {
        f"{stat}/{name}" for stat in ("mean", "max", "min", "median", "std") for name in names
    } <= set(theirs)
    for name, value in theirs.items():  # every metric NeMo Gym computes, by its name and value
        assert math.isclose(ours["agent_metrics"][name], value, abs_tol=1e-9), name
    assert set(out["their_key_metrics"]) <= set(ours["key_metrics"])

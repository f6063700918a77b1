"""The remote environment client asks a peer's server only what that kind of server has.

NeMo Gym's resources servers and ``nel serve`` answer 404 to palaestra's own ``GET /tools``,
NeMo Gym 0.4 to ``/close_session`` and ``nel serve`` to ``GET /``. Stand-ins that answer
404 to anything else, as those servers do (``tests.support.recording_peers``), are started as
``--env-cmd`` servers and driven through whole rollouts: no request may end in 404.
"""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

from palaestra import ToolCallingAgent
from palaestra.collection.served_tasks import served_tasks
from palaestra.remote.env import RemoteEnvironmentClient
from palaestra.remote.managed import ManagedServer, managed_server
from palaestra.types import JsonDict
from tests.support.fake_model import FakeModel, call, outputs_so_far, response, say
from tests.support.recording_peers import recorded

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "requests.log"


def peer(kind: str, log: Path) -> str:
    return (
        f"cd {REPO} && exec {sys.executable} -m tests.support.recording_peers {kind} {{port}} {log}"
    )


async def rollout(url: str, task: JsonDict, model: FakeModel) -> JsonDict:
    env = await RemoteEnvironmentClient.connect(url)
    try:
        result = await ToolCallingAgent().run(task, env, model)
    finally:
        await env.aclose()
    assert result.failure is None and result.verdict is not None, result.failure
    return {"reward": result.verdict.reward}


def counts_to_three(params: JsonDict) -> JsonDict:
    if outputs_so_far(params):
        return say("done")
    return response(call("increment", '{"amount": 3}', "c0"))


async def test_a_nemo_gym_server_is_asked_nothing_it_lacks_over_a_whole_rollout(
    log: Path,
) -> None:
    async with managed_server(peer("nemo-gym", log)) as server:
        task: JsonDict = {"responses_create_params": {"input": "count to 3"}, "target_value": 3}
        for _ in range(2):
            assert await rollout(server.url, task, FakeModel(counts_to_three)) == {"reward": 1.0}
    requests = recorded(log)
    assert [r for r in requests if r[2] == 404] == []  # before: GET /tools, /close_session
    paths = {path for _, path, _ in requests}
    assert {"/seed_session", "/increment", "/verify"} <= paths
    assert not paths & {"/tools", "/close_session", "/health"}


async def test_a_nel_serve_benchmark_is_asked_nothing_it_lacks_from_tasks_to_verdicts(
    tmp_path: Path, log: Path
) -> None:
    def answers(params: JsonDict) -> JsonDict:
        return say("It is 4.")

    async with managed_server(peer("nel", log)) as server:
        tasks = await served_tasks(server.url, tmp_path / "tasks.jsonl")
        first = orjson.loads(tasks.read_bytes().splitlines()[0])
        assert await rollout(server.url, first, FakeModel(answers)) == {"reward": 1.0}
    requests = recorded(log)
    assert [r for r in requests if r[2] == 404] == []  # before: GET /, GET /tools, close
    assert ("GET", "/", 200) not in requests and ("POST", "/verify", 200) in requests


async def test_waiting_for_a_peer_to_be_healthy_asks_only_its_routes(log: Path) -> None:
    for kind in ("nemo-gym", "nel"):
        server = ManagedServer(peer(kind, log))
        await server.start()
        await server.stop()
    assert [r for r in recorded(log) if r[2] == 404] == []  # before: GET / of nel serve

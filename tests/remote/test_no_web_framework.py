"""The remote clients are plain HTTP: a remote-env rollout never loads a web framework."""

from __future__ import annotations

import subprocess
import sys

import orjson

from palaestra.envs.counter.environment import Counter
from palaestra.http.runner import BackgroundServer
from palaestra.serve.env_app import environment_app

ROLLOUT = """
import asyncio, sys
import orjson
from palaestra.remote import RemoteAgent, RemoteEnvironmentClient
from palaestra.agents import ToolCallingAgent
from tests.support.fake_model import FakeModel, call, outputs_so_far, response, say

def script(params):
    if outputs_so_far(params):
        return say("done")
    return response(call("increment", '{"amount": 3}', "c0"))

async def main():
    env = await RemoteEnvironmentClient.connect(sys.argv[1])
    try:
        task = {"responses_create_params": {"input": "count to 3"}, "target_value": 3}
        result = await ToolCallingAgent().run(task, env, FakeModel(script))
    finally:
        await env.aclose()
    frameworks = ("starlette", "fastapi", "uvicorn")
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in frameworks)
    reward = result.verdict and result.verdict.reward
    print(orjson.dumps({"reward": reward, "loaded": loaded}).decode())

asyncio.run(main())
"""


def test_a_remote_env_rollout_loads_no_web_framework() -> None:
    with BackgroundServer(environment_app(Counter())) as server:
        done = subprocess.run(
            [sys.executable, "-c", ROLLOUT, server.url],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    out = orjson.loads(done.stdout.strip().splitlines()[-1])
    assert out["reward"] == 1.0
    assert out["loaded"] == []  # before: starlette, via serve.sessions_http's header name

"""OpenEnv's own harness on palaestra environments through ``PalaestraSessionFactory``.

OpenEnv's ``CollectRunner`` and its TRL rollout function (``build_harness_rollout_func``) run
in a peer venv of each OpenEnv line (``openenv-core`` 0.3, ``openenv`` 0.10), on the counter
environment in that process and served over HTTP.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from palaestra.envs.counter.environment import Counter
from palaestra.http.guard import Guard
from palaestra.http.runner import BackgroundServer
from palaestra.serve.env_app import environment_app
from tests.interop.peer_run import run_peer
from tests.support.peers import REPO_ROOT

TASKS = [
    {"responses_create_params": {"input": "Add 2."}, "initial_value": 0, "target_value": 2},
    {"responses_create_params": {"input": "Add 5."}, "initial_value": 0, "target_value": 5},
    {"responses_create_params": {"input": "Add."}, "initial_value": 0},  # verify cannot score it
]


PEERS = ["openenv", "openenv10"]
"""openenv-core 0.3.0 and openenv 0.10.0."""


def harness(tmp_path: Path, peer: str, env: str, token: str | None = None) -> Any:
    spec = {
        "palaestra_root": str(REPO_ROOT),
        "env": env,
        "token": token,
        "tasks": TASKS,
        "out": str(tmp_path / "collected"),
    }
    return run_peer(peer, "openenv_harness.py", spec, cwd=tmp_path)


def check(out: Any) -> None:
    # The policy always adds 2: the env's verifier scores task 0 as 1 and task 1 as 0.
    assert out["tools"] == ["increment", "read_counter"]
    assert out["summary"] == {"collected": 2, "failed": 1, "avg_reward": 0.5}
    first, second = out["records"]
    assert (first["reward"], second["reward"]) == (1.0, 0.0)
    assert first["verify_metrics"] == {"final_value": 2.0, "distance": 0.0}
    rejected, accepted = first["tool_trace"]
    assert rejected["result"]["data"].startswith("Error: invalid arguments for tool 'increment'")
    assert rejected["result"]["error"] == rejected["result"]["data"]
    assert accepted["result"] == {"data": "2", "done": False, "metadata": {}, "error": None}
    # TRL's rollout function: the env reward per rollout and the policy's tokens untouched
    assert out["trl"]["env_reward"] == [1.0, 0.0]
    assert out["trl"]["completion_ids"] == [[100, 101, 102]] * 2
    # a rollout the verifier cannot score stops the step with its kind, never a 0 (in process
    # the verifier's exception itself, over HTTP the failure verdict the server answered)
    assert out["trl_failure"].startswith(("VerifierFailure: ", "EpisodeFailed: rollout failed"))
    assert "verify raised KeyError: 'target_value'" in out["trl_failure"]
    # TRL's asynchronous GRPO names the task by its dataset prompt (factory.prompts()): the
    # session is that task's (Add 5.: the policy's 2 scores 0), and an unknown prompt is refused
    trl_async = out["trl_async"]
    assert trl_async["prompt"] == [{"role": "user", "content": "Add 5."}]
    assert trl_async["initial"] == trl_async["prompt"] and trl_async["reward"] == 0.0
    assert "no task of this factory has this prompt" in trl_async["unknown"]
    # a task index past the factory's tasks is refused naming both, never wrapped around
    assert trl_async["past_end"].startswith("InputError: ")
    assert "task index 999 is out of range: this factory has 3 tasks" in trl_async["past_end"]


@pytest.mark.parametrize("peer", PEERS)
def test_openenv_collects_and_trains_on_a_palaestra_environment_in_its_process(
    tmp_path: Path, peer: str
) -> None:
    check(harness(tmp_path, peer, "counter"))


@pytest.mark.parametrize("peer", PEERS)
@pytest.mark.parametrize("token", [None, "env-secret"])
def test_openenv_collects_and_trains_on_a_served_palaestra_environment(
    tmp_path: Path, token: str | None, peer: str
) -> None:
    with BackgroundServer(Guard(environment_app(Counter()), token=token)) as env:
        check(harness(tmp_path, peer, env.url, token))

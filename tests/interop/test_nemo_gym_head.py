"""NeMo Gym 0.4.0's own ``ng_collect_rollouts`` and ``ng_status`` pointed at ``palaestra run``.

The collector finds the stack only through its head server (``/global_config_dict_yaml``),
POSTs each row to ``/run`` of the agent the row names, and files what comes back; ``ng_status``
reads ``/server_instances``. Both are the peer's real console scripts, in its own venv.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import orjson
import pytest

from palaestra.types import JsonDict
from tests.cli.test_run_cli import PALAESTRA, read_until
from tests.support.network import free_port
from tests.support.peers import REPO_ROOT, peer_python
from tests.support.scripted_model import (
    ScriptedModelServer,
    text_response,
    tool_call_response,
)

TOKENS = {  # what a vLLM-backed model returns on the last item of each call
    "prompt_token_ids": [1, 2, 3],
    "generation_token_ids": [4, 5],
    "generation_log_probs": [-0.25, -0.5],
}


def weather_with_tokens(params: JsonDict) -> JsonDict:
    items = params["input"] if isinstance(params["input"], list) else []
    if any(i.get("type") == "function_call_output" for i in items):
        return text_response("It is cold, take a coat.", last_item=TOKENS)
    return tool_call_response("get_weather", '{"city": "Paris"}', last_item=TOKENS)


def peer_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(RAY_USAGE_STATS_ENABLED="0", WANDB_MODE="disabled", HF_HUB_OFFLINE="1")
    return env


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A real ``palaestra run`` stack (weather env + agent on a scripted model); its head URL."""
    monkeypatch.setenv("PALAESTRA_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("PALAESTRA_SERVER_TOKEN", raising=False)
    with ScriptedModelServer(weather_with_tokens) as model:
        (tmp_path / "stack.yaml").write_text(f"""
servers:
  weather_env: {{kind: env, env: weather}}
  weather_agent: {{kind: agent, env: weather_env, model: "{model.url}"}}
""")
        process = subprocess.Popen(
            [*PALAESTRA, "run", "stack.yaml"],
            cwd=tmp_path,
            text=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            read_until(process, "ready in")
            yield str(orjson.loads((tmp_path / ".palaestra" / "stack.json").read_bytes())["head"])
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()


def ng(command: str, head: str, *overrides: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    parts = urlsplit(head)
    script = peer_python("nemo-gym").parent / command
    return subprocess.run(
        [
            str(script),
            f"+head_server.host={parts.hostname}",
            f"+head_server.port={parts.port}",
            *overrides,
        ],
        cwd=cwd,
        env=peer_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_ng_collect_rollouts_collects_from_a_palaestra_stack_found_through_its_head(
    tmp_path: Path, stack: str
) -> None:
    rows = [
        {
            "responses_create_params": {"input": f"Weather in {city}?"},
            "agent_ref": {"type": "responses_api_agents", "name": "weather_agent"},
            "city": city,
        }
        for city in ("Rome", "Oslo")
    ]
    (tmp_path / "tasks.jsonl").write_text("".join(orjson.dumps(r).decode() + "\n" for r in rows))
    done = ng(
        "ng_collect_rollouts",
        stack,
        "+input_jsonl_fpath=tasks.jsonl",
        "+output_jsonl_fpath=rollouts.jsonl",
        "+num_repeats=2",
        cwd=tmp_path,
    )
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    rollouts = [orjson.loads(x) for x in (tmp_path / "rollouts.jsonl").read_bytes().splitlines()]
    assert len(rollouts) == 4 and all(r["reward"] == 1.0 for r in rollouts)
    assert sorted((r["_ng_task_index"], r["_ng_rollout_index"]) for r in rollouts) == [
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
    ]
    assert all(r["agent_ref"]["name"] == "weather_agent" for r in rollouts)
    # the training fields the model put on each call's last item reach the collected rows
    output = rollouts[0]["response"]["output"]
    calls = [item for item in output if item["type"] in ("function_call", "message")]
    assert len(calls) == 2 and all({**item, **TOKENS} == item for item in calls)
    [metrics] = orjson.loads((tmp_path / "rollouts_aggregate_metrics.json").read_bytes())
    assert metrics["agent_metrics"]["mean/reward"] == 1.0


def test_ng_status_lists_the_servers_of_a_palaestra_stack_as_healthy(
    tmp_path: Path, stack: str
) -> None:
    done = ng("ng_status", stack, cwd=tmp_path)
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert "weather_env (resources_servers/palaestra_env)" in done.stdout
    assert "weather_agent (responses_api_agents/palaestra_agent)" in done.stdout
    assert "2 servers found (2 healthy, 0 unhealthy)" in done.stdout


PLUGIN = REPO_ROOT / "integrations" / "nemo_gym" / "responses_api_agents"


def test_ng_run_starts_the_palaestra_agent_plugin_and_its_collector_uses_it(
    tmp_path: Path,
) -> None:
    """NeMo Gym's ``ng_run`` starts palaestra's agent from the plug-in directory (found in the
    working directory, with ``.venv`` the venv that has palaestra), and its own head server
    sends ``ng_collect_rollouts`` to it."""
    shutil.copytree(PLUGIN, tmp_path / "responses_api_agents")
    (tmp_path / "responses_api_agents" / "palaestra_agent" / ".venv").symlink_to(sys.prefix)
    head_port = free_port()
    entry = "+palaestra_agent.responses_api_agents.palaestra_agent"
    # Ray binds the machine's own address unless it runs as a single-machine cluster: loopback
    env = {**peer_env(), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    with ScriptedModelServer(weather_with_tokens) as model:
        ng_run = subprocess.Popen(
            [
                str(peer_python("nemo-gym").parent / "ng_run"),
                "+config_paths=[responses_api_agents/palaestra_agent/configs/palaestra_agent.yaml]",
                "+skip_venv_if_present=true",
                "+head_server.host=127.0.0.1",
                f"+head_server.port={head_port}",
                f"{entry}.model={model.url}",
                f"{entry}.max_steps=4",
            ],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its Ray processes and servers are stopped as one group
        )
        try:
            said = read_stdout_until(ng_run, "servers ready", timeout=150)
            assert "Started Ray cluster at 127.0.0.1:" in said  # loopback only
            assert "serving agent tool_calling on weather" in said  # palaestra's own server
            row = {
                "responses_create_params": {"input": "Weather in Rome?"},
                "agent_ref": {"type": "responses_api_agents", "name": "palaestra_agent"},
            }
            (tmp_path / "tasks.jsonl").write_text(orjson.dumps(row).decode() + "\n")
            done = ng(
                "ng_collect_rollouts",
                f"http://127.0.0.1:{head_port}",
                "+input_jsonl_fpath=tasks.jsonl",
                "+output_jsonl_fpath=rollouts.jsonl",
                cwd=tmp_path,
            )
            assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            [rollout] = [
                orjson.loads(x) for x in (tmp_path / "rollouts.jsonl").read_bytes().splitlines()
            ]
            assert rollout["reward"] == 1.0 and rollout["called_tool"] is True
            assert {**rollout["response"]["output"][-1], **TOKENS} == rollout["response"]["output"][
                -1
            ]
        finally:
            stop_group(ng_run)


def read_stdout_until(process: subprocess.Popen[str], needle: str, timeout: float) -> str:
    assert process.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line and process.poll() is not None:
            break
        seen.append(line)
        if needle in line:
            return "".join(seen)
    raise AssertionError(f"{needle!r} never appeared:\n{''.join(seen)[-4000:]}")


def stop_group(process: subprocess.Popen[str]) -> None:
    """SIGINT ng_run's process group (it shuts its Ray cluster down), SIGKILL what is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGINT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(30)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(10)

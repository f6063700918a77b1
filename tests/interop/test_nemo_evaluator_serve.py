"""palaestra consumes NeMo Evaluator: ``collect`` against the real ``nel serve`` (0.3.0).

The benchmark is a small local one (``peer_scripts/nel_sums_benchmark.py``: NEL's built-in
benchmarks download data). The model is scripted: it answers every sum right except 10 + 5, so
each reward says the server scored that very answer against that very task.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

import palaestra
from palaestra._util.processes import alive
from palaestra.types import JsonDict
from tests.cli.test_run_cli import read_until
from tests.interop.peer_run import SCRIPTS
from tests.support.network import free_port
from tests.support.peers import peer_python
from tests.support.scripted_model import ScriptedModelServer, text_response

BENCHMARK = SCRIPTS / "nel_sums_benchmark.py"
SUMS = {"2 + 2": 1.0, "3 + 4": 1.0, "10 + 5": 0.0, "7 + 8": 1.0}
"""The benchmark's four problems and the reward the scripted model's answer earns."""


def sums(params: JsonDict) -> JsonDict:
    items = params["input"]
    text = next(i["content"] for i in reversed(items) if i.get("role") == "user")
    a, b = map(int, re.search(r"(\d+) \+ (\d+)", text).groups())  # type: ignore[union-attr]
    return text_response(f"The answer is {a + b + (1 if a == 10 else 0)}")


def nel() -> str:
    return str(peer_python("nemo-evaluator").parent / "nel")


def peer_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HF_HUB_OFFLINE="1", NO_PROXY="*")
    return env


def serve_command(port: str) -> list[str]:
    return [nel(), "serve", "-b", str(BENCHMARK), "--host", "127.0.0.1", "-p", port]


@pytest.fixture
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(sums) as server:
        yield server


@pytest.fixture
def nel_serve(tmp_path: Path) -> Iterator[str]:
    """``nel serve`` of the local benchmark (its data exported to ``tmp_path/export``)."""
    port = free_port()
    process = subprocess.Popen(
        [*serve_command(str(port)), "--export-data", str(tmp_path / "export")],
        env=peer_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.communicate()[0]
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                assert time.monotonic() < deadline, "nel serve never became healthy"
                time.sleep(0.2)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def rewards(output: Path) -> dict[str, float]:
    found = {}
    for line in output.read_bytes().splitlines():
        row = orjson.loads(line)
        prompt = row["responses_create_params"]["input"][-1]["content"]
        found[re.search(r"\d+ \+ \d+", prompt).group(0)] = row["reward"]  # type: ignore[union-attr]
    return found


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_collect_takes_the_tasks_from_nel_serve_and_it_scores_each_answer(
    tmp_path: Path, nel_serve: str, model: ScriptedModelServer, host: str
) -> None:
    url = nel_serve.replace("127.0.0.1", host)
    output = tmp_path / "runs" / "sums.jsonl"
    summary = palaestra.collect(env_url=url, model=model.url, output=output)
    assert summary.stopped_reason is None and summary.done == 4 and not summary.failures
    assert rewards(output) == SUMS
    # the tasks were materialised beside the output, as NEL's own export writes them
    tasks = [
        orjson.loads(x) for x in (tmp_path / "runs" / "sums_tasks.jsonl").read_bytes().splitlines()
    ]
    assert [t["expected_answer"] for t in tasks] == ["4", "7", "15", "15"]
    assert tasks[0]["responses_create_params"]["input"][0] == {
        "role": "system",
        "content": "You add numbers.",
    }
    # and a resume reads them again from the server: the same run, nothing left to do
    again = palaestra.collect(env_url=url, model=model.url, output=output, resume=True)
    assert again.skipped == 4 and again.done == 0


def test_collect_reads_nel_export_data_as_its_input(
    tmp_path: Path, nel_serve: str, model: ScriptedModelServer
) -> None:
    [exported] = (tmp_path / "export").glob("*.jsonl")
    output = tmp_path / "exported.jsonl"
    summary = palaestra.collect(env_url=nel_serve, model=model.url, input=exported, output=output)
    assert summary.done == 4 and not summary.failures
    assert rewards(output) == SUMS
    assert not (tmp_path / "exported_tasks.jsonl").exists()  # --input given: nothing fetched


def test_collect_env_cmd_starts_nel_serve_uses_it_and_stops_it(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    pid_file = tmp_path / "nel.pid"
    command = f"echo $$ > {pid_file}; exec {' '.join(serve_command('{port}'))}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "palaestra",
            "collect",
            "--env-cmd",
            command,
            "--model",
            model.url,
            "--output",
            "runs/sums.jsonl",
        ],
        cwd=tmp_path,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert rewards(tmp_path / "runs" / "sums.jsonl") == SUMS
    assert "palaestra-sums" in (tmp_path / "runs" / "sums_env_server.log").read_text()
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # our own child: reaped by the collector, so no zombie either


def test_a_stack_env_entry_runs_nel_serve_for_its_agent_and_stops_it_with_the_stack(
    tmp_path: Path, model: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``{kind: env, cmd: ...}`` in a ``palaestra run`` stack: the command's server is the
    stack's env server (collect reads its tasks, its agent runs on it) until the stack stops."""
    monkeypatch.setenv("PALAESTRA_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("PALAESTRA_SERVER_TOKEN", raising=False)
    pid_file = tmp_path / "nel.pid"
    command = f"echo $$ > {pid_file}; exec {' '.join(serve_command('{port}'))}"
    (tmp_path / "stack.yaml").write_text(
        "servers:\n"
        f"  sums_env: {{kind: env, cmd: {orjson.dumps(command).decode()}}}\n"
        f'  sums_agent: {{kind: agent, env: sums_env, model: "{model.url}"}}\n'
    )
    stack = subprocess.Popen(
        [sys.executable, "-m", "palaestra", "run", "stack.yaml"],
        cwd=tmp_path,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        text=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        read_until(stack, "ready in", timeout=120)
        head = orjson.loads((tmp_path / ".palaestra" / "stack.json").read_bytes())["head"]
        with urllib.request.urlopen(f"{head}/servers", timeout=10) as answer:
            servers = {s["name"]: s["url"] for s in orjson.loads(answer.read())["servers"]}
        served = palaestra.collect(
            env_url=servers["sums_env"], model=model.url, output=tmp_path / "env.jsonl"
        )
        assert served.done == 4 and rewards(tmp_path / "env.jsonl") == SUMS
        through_agent = palaestra.collect(
            agent_url=servers["sums_agent"],
            input=tmp_path / "env_tasks.jsonl",
            output=tmp_path / "agent.jsonl",
        )
        assert through_agent.done == 4 and rewards(tmp_path / "agent.jsonl") == SUMS
    finally:
        stack.send_signal(signal.SIGINT)
        try:
            stack.wait(30)
        except subprocess.TimeoutExpired:
            stack.kill()
    assert stack.returncode == 0
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:  # reaped by the stack's env server
        time.sleep(0.05)
    assert not alive(pid), "nel serve outlived the stack"

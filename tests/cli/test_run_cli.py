"""``palaestra run`` as a user runs it: a stack of real server processes, then Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.cli.test_collect_cli import PALAESTRA, rows, run_cli, weather_script
from tests.support.scripted_model import ScriptedModelServer


def read_until(process: subprocess.Popen[str], needle: str, timeout: float = 60) -> str:
    assert process.stderr is not None
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line and process.poll() is not None:
            break
        seen.append(line)
        if needle in line:
            return "".join(seen)
    raise AssertionError(f"{needle!r} never appeared:\n{''.join(seen)}")


@pytest.fixture
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(weather_script()) as server:
        yield server


def start_stack(tmp_path: Path, model_url: str) -> subprocess.Popen[str]:
    (tmp_path / "stack.yaml").write_text(f"""
servers:
  weather_env: {{kind: env, env: weather}}
  weather_agent: {{kind: agent, env: weather_env, model: "{model_url}"}}
""")
    return subprocess.Popen(
        [*PALAESTRA, "run", "stack.yaml"],
        cwd=tmp_path,
        text=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "COLUMNS": "200"},
    )


def test_stack_serves_collects_reports_a_death_and_stops_cleanly(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    stack = start_stack(tmp_path, model.url)
    try:
        read_until(stack, "ready in")
        status = run_cli("status", cwd=tmp_path)
        assert status.returncode == 0, status.stderr
        assert "weather_env" in status.stdout and "weather_agent" in status.stdout
        state = orjson.loads((tmp_path / ".palaestra" / "stack.json").read_bytes())
        import urllib.request

        with urllib.request.urlopen(f"{state['head']}/servers") as answer:
            servers = {s["name"]: s for s in orjson.loads(answer.read())["servers"]}
        assert all(s["status"] == "ready" for s in servers.values())

        (tmp_path / "t.jsonl").write_text('{"responses_create_params": {"input": "Rome?"}}\n' * 3)
        through_agent = run_cli(
            "collect",
            "--agent-url",
            servers["weather_agent"]["url"],
            "--input",
            "t.jsonl",
            "--output",
            "a.jsonl",
            cwd=tmp_path,
        )
        assert through_agent.returncode == 0, through_agent.stderr
        assert [r["reward"] for r in rows(tmp_path / "a.jsonl")] == [1.0] * 3
        through_env = run_cli(
            "collect",
            "--env-url",
            servers["weather_env"]["url"],
            "--model",
            model.url,
            "--input",
            "t.jsonl",
            "--output",
            "e.jsonl",
            cwd=tmp_path,
        )
        assert through_env.returncode == 0, through_env.stderr
        assert all(r["called_tool"] for r in rows(tmp_path / "e.jsonl"))

        os.kill(servers["weather_env"]["pid"], signal.SIGKILL)
        report = read_until(stack, "last log lines")
        assert "server 'weather_env'" in report
        after = run_cli(
            "collect",
            "--agent-url",
            servers["weather_agent"]["url"],
            "--input",
            "t.jsonl",
            "--output",
            "b.jsonl",
            cwd=tmp_path,
        )
        failures = rows(tmp_path / "b_failures.jsonl")
        assert after.returncode == 0 and len(failures) == 3
        assert all(servers["weather_env"]["url"] in f["failure"]["reason"] for f in failures)

        stack.send_signal(signal.SIGINT)
        read_until(stack, "stack stopped")
        assert stack.wait(20) == 0
    finally:
        if stack.poll() is None:
            stack.kill()
    for server in servers.values():
        with pytest.raises(ProcessLookupError):
            os.kill(server["pid"], 0)
    assert not (tmp_path / ".palaestra" / "stack.json").exists()


def test_a_server_that_cannot_start_is_named_with_its_last_lines(tmp_path: Path) -> None:
    (tmp_path / "stack.yaml").write_text("servers:\n  broken: {kind: env, env: no_such_env}\n")
    done = subprocess.run(
        [*PALAESTRA, "run", "stack.yaml"], cwd=tmp_path, text=True, capture_output=True, timeout=60
    )
    assert done.returncode == 1
    assert "server 'broken'" in done.stderr
    assert "unknown environment 'no_such_env'" in done.stderr


def test_bad_stack_file_names_the_field(tmp_path: Path) -> None:
    (tmp_path / "stack.yaml").write_text(
        "servers:\n  a: {kind: agent, env: e, model: m}\n  e: {kind: model}\n"
    )
    done = subprocess.run(
        [*PALAESTRA, "run", "stack.yaml"], cwd=tmp_path, text=True, capture_output=True, timeout=60
    )
    assert done.returncode == 1
    assert "field 'servers.a.env': 'e' is a model server" in done.stderr
    (tmp_path / "stack.yaml").write_text("servers:\n  a: {kind: database}\n")
    done = subprocess.run(
        [*PALAESTRA, "run", "stack.yaml"], cwd=tmp_path, text=True, capture_output=True, timeout=60
    )
    assert "field 'servers.a.kind'" in done.stderr and "Traceback" not in done.stderr


def test_status_without_a_stack(tmp_path: Path) -> None:
    done = run_cli("status", cwd=tmp_path)
    assert done.returncode == 1 and "no stack is running" in done.stderr

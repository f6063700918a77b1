"""``palaestra run`` as a user runs it: a stack of real server processes, then Ctrl-C or worse."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from palaestra.transport import unix_url
from palaestra.types import JsonDict
from tests.cli.test_collect_cli import PALAESTRA as PALAESTRA  # re-exported: other tests use it
from tests.cli.test_collect_cli import rows, run_cli, weather_script
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


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Stacks are recorded here (inherited by every command the tests start), not in ~."""
    state = tmp_path / "state"
    monkeypatch.setenv("PALAESTRA_STATE_DIR", str(state))
    return state


@pytest.fixture
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(weather_script()) as server:
        yield server


def start_stack(
    tmp_path: Path, model_url: str, env_entry: str = "{kind: env, env: weather}"
) -> subprocess.Popen[str]:
    """``palaestra run`` of a stack: ``weather_env`` (``env_entry``) and an agent on it."""
    (tmp_path / "stack.yaml").write_text(f"""
servers:
  weather_env: {env_entry}
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


def head_servers(head: str) -> dict[str, JsonDict]:
    """The stack's servers by name, as its head lists them."""
    import urllib.request

    with urllib.request.urlopen(f"{head}/servers") as answer:
        return {s["name"]: s for s in orjson.loads(answer.read())["servers"]}


def spec_of(cwd: Path, server: JsonDict) -> JsonDict:
    """The ``ServeSpec`` the supervisor wrote beside the server's log."""
    spec: JsonDict = orjson.loads((cwd / server["log"]).with_suffix(".spec.json").read_bytes())
    return spec


def test_stack_serves_collects_reports_a_death_and_stops_cleanly(
    tmp_path: Path, model: ScriptedModelServer, state_dir: Path
) -> None:
    stack = start_stack(tmp_path, model.url)
    try:
        read_until(stack, "ready in")
        status = run_cli("status", cwd=tmp_path)
        assert status.returncode == 0, status.stderr
        assert "weather_env" in status.stdout and "weather_agent" in status.stdout
        state = orjson.loads((state_dir / f"{stack.pid}.json").read_bytes())
        assert orjson.loads((tmp_path / ".palaestra" / "stack.json").read_bytes()) == state
        servers = head_servers(state["head"])
        assert all(s["status"] == "ready" for s in servers.values())
        # The env server also listens on a Unix socket in a directory only this user enters;
        # the stack's agent is pointed there (the agent itself is reached over TCP).
        sockets = Path(servers["weather_env"]["unix_socket"]).parent
        assert Path(servers["weather_env"]["unix_socket"]).is_socket()
        assert sockets.stat().st_mode & 0o777 == 0o700
        assert servers["weather_agent"]["unix_socket"] is None
        env_url = spec_of(tmp_path, servers["weather_agent"])["env"]["url"]
        assert env_url == unix_url(servers["weather_env"]["unix_socket"])

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
        # labelled with the served agent's name, as GET / gives it (before: remote_remote_agent)
        labels = {r["agent_ref"]["name"] for r in rows(tmp_path / "a.jsonl")}
        assert len(labels) == 1 and labels.pop().endswith("_tool_calling")
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
        assert after.returncode == 3, after.stderr  # stopped: the environment is unreachable
        assert "the environment server is unreachable" in after.stderr + after.stdout, after.stdout
        assert len(failures) == 3
        # The agent reaches its stack's env server on the env's Unix socket.
        socket_path = servers["weather_env"]["unix_socket"]
        assert all(socket_path in f["failure"]["reason"] for f in failures)

        stack.send_signal(signal.SIGINT)
        read_until(stack, "stack stopped")
        assert stack.wait(20) == 0
    finally:
        if stack.poll() is None:
            stack.kill()
    for server in servers.values():
        with pytest.raises(ProcessLookupError):
            os.kill(server["pid"], 0)
    assert not list(state_dir.glob("*.json"))
    assert not (tmp_path / ".palaestra" / "stack.json").exists()
    assert not sockets.exists()


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


def gone(pid: int) -> bool:
    """Whether ``pid`` has exited (a zombie nobody reaped yet counts as exited)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def wait_until_gone(pids: list[int], seconds: float = 15) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not all(gone(pid) for pid in pids):
        time.sleep(0.1)
    return [pid for pid in pids if not gone(pid)]


def servers_of(status: subprocess.CompletedProcess[str], state_dir: Path) -> dict[str, JsonDict]:
    assert status.returncode == 0, status.stderr
    (record,) = [orjson.loads(p.read_bytes()) for p in state_dir.glob("*.json")]
    return head_servers(record["head"])


def test_kill_9_of_the_supervisor_takes_its_servers_with_it_and_status_works_from_anywhere(
    tmp_path: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """...and the next stack to start removes the socket directory the killed one left."""
    # The stacks' socket directories go in a temporary directory of this test's own: any
    # stack that starts sweeps its parent, so one another test starts meanwhile (pytest's other
    # worker) would otherwise remove the killed stack's directory before this one does.
    sockets_parent = Path(tempfile.mkdtemp(prefix="st-"))  # short: a socket path is <108 bytes
    monkeypatch.setenv("TMPDIR", str(sockets_parent))
    here, elsewhere = tmp_path / "stack", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    (here / "stack.yaml").write_text(
        "servers:\n  one: {kind: env, env: counter}\n  two: {kind: env, env: counter}\n"
    )
    stack = subprocess.Popen(
        [*PALAESTRA, "run", "stack.yaml"], cwd=here, text=True, stderr=subprocess.PIPE
    )
    try:
        read_until(stack, "ready in")
        status = run_cli("status", cwd=elsewhere)  # before: "no stack is running here"
        assert "one" in status.stdout and "two" in status.stdout, status.stderr
        assert str(here / "stack.yaml") in status.stdout.replace("\n", "")
        servers = servers_of(status, state_dir)
        pids = [int(s["pid"]) for s in servers.values()]
        sockets = Path(servers["one"]["unix_socket"]).parent
        stack.kill()  # SIGKILL: no cleanup of its own
        stack.wait(10)
        assert wait_until_gone(pids) == []  # before: both servers kept running
        after = run_cli("status", cwd=elsewhere)
        assert after.returncode == 1 and "no stack is running" in after.stderr
        assert not list(state_dir.glob("*.json"))  # the dead supervisor's record is removed
        assert sockets.is_dir()  # only a stack that starts later can remove it
        stack = subprocess.Popen(
            [*PALAESTRA, "run", "stack.yaml"], cwd=here, text=True, stderr=subprocess.PIPE
        )
        read_until(stack, "ready in")
        assert sockets.parent == sockets_parent
        assert not sockets.exists()  # before: left in /tmp for good
        (record,) = [orjson.loads(p.read_bytes()) for p in state_dir.glob("*.json")]
        assert Path(head_servers(record["head"])["one"]["unix_socket"]).is_socket()
        stack.send_signal(signal.SIGINT)
        assert stack.wait(20) == 0
    finally:
        if stack.poll() is None:
            stack.kill()
        shutil.rmtree(sockets_parent, ignore_errors=True)


def test_with_a_token_every_server_of_the_stack_and_its_head_require_it(
    tmp_path: Path, model: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PALAESTRA_SERVER_TOKEN", "stack-secret")
    (tmp_path / "stack.yaml").write_text(f"""
servers:
  weather_env: {{kind: env, env: weather}}
  proxy: {{kind: model, backend: "{model.url}"}}
  weather_agent: {{kind: agent, env: weather_env, model: proxy}}
""")
    stack = subprocess.Popen(
        [*PALAESTRA, "run", "stack.yaml"], cwd=tmp_path, text=True, stderr=subprocess.PIPE
    )
    try:
        read_until(stack, "ready in")
        status = run_cli("status", cwd=tmp_path)
        assert status.returncode == 0 and "weather_agent" in status.stdout, status.stderr
        import urllib.error
        import urllib.request

        (record,) = [orjson.loads(p.read_bytes()) for p in (tmp_path / "state").glob("*.json")]
        head = str(record["head"])
        for route in ("/", "/servers"):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(f"{head}{route}")  # before: 200, every URL, pid and log
            assert refused.value.code == 401
        auth = {"Authorization": "Bearer stack-secret"}
        request = urllib.request.Request(f"{head}/servers", headers=auth)
        with urllib.request.urlopen(request) as answer:
            servers = {s["name"]: s for s in orjson.loads(answer.read())["servers"]}
        for server in servers.values():
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(f"{server['url']}/")
            assert refused.value.code == 401
        monkeypatch.delenv("PALAESTRA_SERVER_TOKEN")
        anonymous = run_cli("status", cwd=tmp_path)
        assert anonymous.returncode == 1 and "refused the request (401)" in anonymous.stderr
        assert "Traceback" not in anonymous.stderr
        (tmp_path / "t.jsonl").write_text('{"responses_create_params": {"input": "Rome?"}}\n')
        token_file = tmp_path / "token"
        token_file.write_text("stack-secret\n")
        through_agent = run_cli(
            "collect",
            "--agent-url",
            servers["weather_agent"]["url"],
            "--server-token",
            "stack-secret",
            "--input",
            "t.jsonl",
            "--output",
            "a.jsonl",
            cwd=tmp_path,
        )
        # the agent reaches the stack's model server with the stack's token
        assert through_agent.returncode == 0, through_agent.stdout + through_agent.stderr
        assert [r["reward"] for r in rows(tmp_path / "a.jsonl")] == [1.0]
        stack.send_signal(signal.SIGINT)
        assert stack.wait(20) == 0
    finally:
        if stack.poll() is None:
            stack.kill()


def test_a_stack_server_on_a_busy_port_is_named_in_one_line(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as holder:
        port = holder.getsockname()[1]
        (tmp_path / "stack.yaml").write_text(
            f"servers:\n  counter_env: {{kind: env, env: counter, port: {port}}}\n"
        )
        done = subprocess.run(
            [*PALAESTRA, "run", "stack.yaml"],
            cwd=tmp_path,
            text=True,
            capture_output=True,
            timeout=60,
            env={**os.environ, "COLUMNS": "300"},
        )
    assert done.returncode == 1
    assert (
        f"server 'counter_env' (env) could not start: cannot listen on 127.0.0.1:{port}: "
        "address already in use" in done.stderr
    ), done.stderr
    assert "Traceback" not in done.stderr
    log = (tmp_path / ".palaestra" / "logs" / "stack" / "counter_env.log").read_text()
    assert "Traceback" not in log  # before: the server's log tail was a raw traceback


def test_an_env_server_run_as_a_command_is_reached_over_tcp_by_the_stacks_agent(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    # A `cmd:` server is someone else's: it announces no Unix socket, so the agent gets its URL.
    command = f"{sys.executable} -m palaestra serve env weather --port {{port}}"
    stack = start_stack(tmp_path, model.url, f'{{kind: env, cmd: "{command}"}}')
    try:
        read_until(stack, "ready in")
        state = orjson.loads((tmp_path / ".palaestra" / "stack.json").read_bytes())
        servers = head_servers(state["head"])
        assert servers["weather_env"]["unix_socket"] is None
        agent_spec = spec_of(tmp_path, servers["weather_agent"])
        assert agent_spec["env"]["url"] == servers["weather_env"]["url"]
        (tmp_path / "t.jsonl").write_text('{"responses_create_params": {"input": "Rome?"}}\n')
        done = run_cli(
            "collect",
            *("--agent-url", servers["weather_agent"]["url"]),
            *("--input", "t.jsonl", "--output", "a.jsonl"),
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        assert [r["reward"] for r in rows(tmp_path / "a.jsonl")] == [1.0]
        stack.send_signal(signal.SIGINT)
        read_until(stack, "stack stopped")
    finally:
        if stack.poll() is None:
            stack.kill()


def test_two_stacks_started_from_one_directory_write_their_own_logs(
    tmp_path: Path, state_dir: Path
) -> None:
    stacks: list[subprocess.Popen[str]] = []
    try:
        for folder in ("one", "two"):  # two stack files of one name, run from tmp_path
            (tmp_path / folder).mkdir()
            (tmp_path / folder / "stack.yaml").write_text(
                "servers:\n  weather_env: {kind: env, env: weather}\n"
            )
            stacks.append(
                subprocess.Popen(
                    [*PALAESTRA, "run", f"{folder}/stack.yaml"],
                    cwd=tmp_path,
                    text=True,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    env={**os.environ, "COLUMNS": "200"},
                )
            )
            assert f"logs in {Path('.palaestra', 'logs', 'stack')}" in read_until(
                stacks[-1], "ready in"
            )
        heads = {
            orjson.loads((state_dir / f"{stack.pid}.json").read_bytes())["head"] for stack in stacks
        }
        servers = [head_servers(head)["weather_env"] for head in heads]
        assert {str(server["log"]) for server in servers} == {  # before: both in stack/
            str(Path(".palaestra", "logs", "stack", "weather_env.log")),
            str(Path(".palaestra", "logs", "stack-2", "weather_env.log")),
        }
        for server in servers:
            text = (tmp_path / server["log"]).read_text()
            others = [s["url"] for s in servers if s["url"] != server["url"]]
            assert server["url"] in text and not any(url in text for url in others)
        stacks[0].send_signal(signal.SIGINT)  # the first stops; the second's record stays
        assert stacks[0].wait(30) == 0
        recorded = orjson.loads((tmp_path / ".palaestra" / "stack.json").read_bytes())
        assert recorded["pid"] == stacks[1].pid
    finally:
        for stack in stacks:
            if stack.poll() is None:
                stack.send_signal(signal.SIGINT)
                stack.wait(30)

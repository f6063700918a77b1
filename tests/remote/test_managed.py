"""``collect --env-cmd``: the environment server it starts is gone after every way a run ends.

Each command writes the pid of its server (``exec``: the shell becomes the server) and of a
helper it left running in the background, in the server's process group: both must be gone
after the run, whether it finished, failed, or was stopped by Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from palaestra._util.processes import alive
from palaestra.errors import ConfigError
from palaestra.remote.managed import ManagedServer, managed_server
from palaestra.transport import unix_url
from tests.support.processes import interruptible
from tests.support.scripted_model import ScriptedFault, ScriptedModelServer, text_response

PALAESTRA = [sys.executable, "-m", "palaestra"]
SERVER = f"{sys.executable} -m palaestra serve env counter --host 127.0.0.1 --port {{port}}"


def command(tmp_path: Path, server: str = SERVER) -> str:
    """``server`` started so that its pid and a background helper's pid are written down."""
    return (
        f"sleep 300 & echo $! > {tmp_path}/helper.pid; "
        f"echo $$ > {tmp_path}/server.pid; exec {server}"
    )


def gone(pid: int) -> bool:
    """No such process, or only its exit status is left (a zombie not yet reaped by init)."""
    if not alive(pid):
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return True
    return state == "Z"


def pids(tmp_path: Path) -> list[int]:
    return [int((tmp_path / f"{name}.pid").read_text()) for name in ("server", "helper")]


def assert_all_gone(tmp_path: Path) -> None:
    for pid in pids(tmp_path):
        deadline = time.monotonic() + 5  # init reaps the orphaned helper on its own time
        while not gone(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gone(pid), f"process {pid} outlived the run"


def counts(params: dict[str, object]) -> dict[str, object]:
    return text_response("done")


@pytest.fixture
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(counts) as server:
        yield server


def collect(tmp_path: Path, model_url: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            *PALAESTRA,
            "collect",
            "--env-cmd",
            command(tmp_path),
            "--model",
            model_url,
            "--output",
            str(tmp_path / "out" / "rollouts.jsonl"),
            "--input",
            str(tmp_path / "tasks.jsonl"),
            *extra,
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=interruptible,
        text=True,
    )


def write_tasks(tmp_path: Path, n: int = 2) -> None:
    rows = [{"responses_create_params": {"input": "count"}, "target_value": 1}] * n
    (tmp_path / "tasks.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))


def test_a_finished_run_stops_the_server_and_all_it_started(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    write_tasks(tmp_path)
    done = collect(tmp_path, model.url)
    _, err = done.communicate(timeout=120)
    assert done.returncode in (0, 4), err  # scored or not, the run ran against the server
    rows = (tmp_path / "out" / "rollouts.jsonl").read_bytes().splitlines()
    assert len(rows) == 2
    assert_all_gone(tmp_path)
    identity = orjson.loads((tmp_path / "out" / "rollouts_run.json").read_bytes())
    # the command, not the port it got this time; the version its server announced
    assert identity["env"] == {"cmd": command(tmp_path), "version": 1}
    assert "counter" in (tmp_path / "out" / "rollouts_env_server.log").read_text()


def test_a_run_that_fails_after_the_server_started_stops_it(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    # no tasks file: the run fails (one line, exit 1) after the server is up
    done = collect(tmp_path, model.url)
    _, err = done.communicate(timeout=120)
    assert done.returncode == 1 and "Traceback" not in err
    assert "tasks.jsonl" in err
    assert_all_gone(tmp_path)


def test_a_server_that_dies_at_start_is_one_line_and_its_last_output(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    write_tasks(tmp_path)
    dying = subprocess.run(
        [
            *PALAESTRA,
            "collect",
            "--env-cmd",
            "echo starting; echo 'boom: no such benchmark' >&2; exit 3",
            "--model",
            model.url,
            "--input",
            "tasks.jsonl",
            "--output",
            "out/r.jsonl",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert dying.returncode == 1 and "Traceback" not in dying.stderr
    first = next(line for line in dying.stderr.splitlines() if line.strip())
    assert "exited with code 3 before it was healthy" in first
    assert "boom: no such benchmark" in dying.stderr and "starting" in dying.stderr
    assert not (tmp_path / "out" / "r.jsonl").exists()  # nothing ran


def run_env_cmd(tmp_path: Path, model_url: str, server: str, timeout: str) -> tuple[str, float]:
    """``collect --env-cmd SERVER --env-cmd-timeout TIMEOUT``: its stderr and its seconds."""
    started = time.monotonic()
    ran = subprocess.run(
        [
            *PALAESTRA,
            "collect",
            "--env-cmd",
            server,
            "--env-cmd-timeout",
            timeout,
            "--model",
            model_url,
            "--input",
            "tasks.jsonl",
            "--output",
            "out/r.jsonl",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert ran.returncode == 1 and "Traceback" not in ran.stderr, ran.stderr
    assert not (tmp_path / "out" / "r.jsonl").exists()  # nothing ran
    return ran.stderr, time.monotonic() - started


def test_the_health_wait_is_env_cmd_timeout_and_an_exit_ends_it_at_once(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    write_tasks(tmp_path)
    err, took = run_env_cmd(tmp_path, model.url, command(tmp_path, "sleep 300"), "1.5")
    assert "was not healthy at http://127.0.0.1:" in err and "after 1.5s" in err
    assert took < 30  # before: "No such option: --env-cmd-timeout"
    assert_all_gone(tmp_path)
    dying = "echo 'boom: no such benchmark' >&2; exit 3"
    err, took = run_env_cmd(tmp_path, model.url, dying, "600")
    assert "exited with code 3 before it was healthy" in err and "boom" in err
    assert took < 30  # not the 600 s given


@pytest.mark.parametrize(
    ("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["ctrl-c", "sigterm"]
)
def test_a_run_stopped_by_a_signal_stops_the_server_and_all_it_started(
    tmp_path: Path, signum: signal.Signals, status: int
) -> None:
    write_tasks(tmp_path)
    slow = ScriptedFault(status=200, body=text_response("done"), delay=60)
    with ScriptedModelServer(lambda params: slow) as model:
        running = collect(tmp_path, model.url)
        try:
            deadline = time.monotonic() + 60
            while not model.requests and time.monotonic() < deadline:  # a rollout is under way
                assert running.poll() is None, running.communicate()
                time.sleep(0.05)
            assert model.requests, "no rollout started"
            running.send_signal(signum)
            _, err = running.communicate(timeout=60)
        finally:
            if running.poll() is None:
                running.kill()
    assert running.returncode == status, err
    assert_all_gone(tmp_path)


async def test_a_server_never_healthy_is_stopped_after_the_timeout(tmp_path: Path) -> None:
    server = ManagedServer(command(tmp_path, "sleep 300"), ready_timeout=0.5)
    with pytest.raises(ConfigError) as raised:
        await server.start()
    assert f"was not healthy at {server.url} after 0.5s" in str(raised.value)
    assert_all_gone(tmp_path)


async def test_a_server_never_healthy_on_a_unix_socket_is_named_by_its_path(
    tmp_path: Path,
) -> None:
    path = tmp_path / "env.sock"
    url = unix_url(str(path))
    server = ManagedServer(command(tmp_path, "sleep 300"), url=url, ready_timeout=0.5)
    with pytest.raises(ConfigError) as raised:
        await server.start()
    assert f"was not healthy at unix:{path} after 0.5s" in str(raised.value)
    assert url not in str(raised.value)  # before: the percent-encoded URL
    assert_all_gone(tmp_path)


async def test_the_port_is_given_as_a_placeholder_and_as_port(tmp_path: Path) -> None:
    said = tmp_path / "said"
    server_command = (
        f"echo {{port}} $PORT > {said}; exec {sys.executable} -m palaestra serve env counter "
        f"--host 127.0.0.1 --port $PORT"
    )
    async with managed_server(server_command) as server:
        assert said.read_text().split() == [str(server.port)] * 2
        assert server.url == f"http://127.0.0.1:{server.port}"
        assert server.died() is None
        pid = server.pid
    assert pid is not None and gone(pid)


async def test_a_server_that_dies_during_the_run_says_so(tmp_path: Path) -> None:
    async with managed_server(command(tmp_path)) as server:
        server_pid, _ = pids(tmp_path)
        subprocess.run(["kill", "-9", str(server_pid)], check=True)
        assert server.process is not None
        while server.process.returncode is None:  # (wait() would also wait for the helper)
            await asyncio.sleep(0.05)
        death = server.died()
    assert death is not None and "exited with code -9" in death
    assert_all_gone(tmp_path)


def test_a_server_that_dies_mid_run_ends_the_run_as_stopped_and_the_summary_says_why(
    tmp_path: Path,
) -> None:
    write_tasks(tmp_path, n=1)

    def die_then_answer(params: dict[str, object]) -> dict[str, object]:
        server_pid, _ = pids(tmp_path)
        os.kill(server_pid, signal.SIGKILL)  # while the rollout waits on the model
        return text_response("done")

    with ScriptedModelServer(die_then_answer) as model:
        done = collect(tmp_path, model.url)
        out, err = done.communicate(timeout=120)
    assert done.returncode == 3, err  # stopped early
    assert "exited with code -9" in out + err
    assert_all_gone(tmp_path)


def moving(tmp_path: Path, server: str = SERVER) -> str:
    """``server`` started beside a helper that leaves the process group (its own session)."""
    return (
        f"setsid sleep 300 & echo $! > {tmp_path}/helper.pid; "
        f"echo $$ > {tmp_path}/server.pid; exec {server}"
    )


async def test_a_process_the_command_moved_out_of_its_group_is_stopped_at_a_clean_end(
    tmp_path: Path,
) -> None:
    async with managed_server(moving(tmp_path)) as server:
        assert server.died() is None
        _, helper = pids(tmp_path)
        assert os.getsid(helper) == helper  # a session of its own: not in the server's group
    assert_all_gone(tmp_path)  # before: the helper outlived the run


def test_a_kill_9_of_collect_takes_the_server_and_all_it_started_with_it(
    tmp_path: Path,
) -> None:
    write_tasks(tmp_path)
    slow = ScriptedFault(status=200, body=text_response("done"), delay=60)
    with ScriptedModelServer(lambda params: slow) as model:
        running = subprocess.Popen(
            [
                *PALAESTRA,
                "collect",
                "--env-cmd",
                moving(tmp_path),
                "--model",
                model.url,
                "--output",
                str(tmp_path / "out" / "rollouts.jsonl"),
                "--input",
                str(tmp_path / "tasks.jsonl"),
            ],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while not model.requests and time.monotonic() < deadline:  # a rollout is under way
                assert running.poll() is None
                time.sleep(0.05)
            assert model.requests, "no rollout started"
            running.kill()
            running.wait(timeout=10)
        finally:
            if running.poll() is None:
                running.kill()
    assert_all_gone(tmp_path)  # within 5 s; before: the helper (and any grandchild) lived on


def test_a_port_another_server_holds_is_refused_in_one_line_before_anything_runs(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    from palaestra.envs.weather.environment import Weather
    from palaestra.http.runner import BackgroundServer
    from palaestra.serve.env_app import environment_app

    write_tasks(tmp_path)
    with BackgroundServer(environment_app(Weather())) as weather:
        port = weather.url.rsplit(":", 1)[1]
        done = subprocess.run(
            [
                *PALAESTRA,
                "collect",
                "--env-cmd",
                command(tmp_path, SERVER.replace("{port}", port)),
                "--env-url",
                weather.url,
                "--model",
                model.url,
                "--input",
                "tasks.jsonl",
                "--output",
                "out/r.jsonl",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode != 0, done.stderr  # before: 0, the weather server's rollouts
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert f"another server already listens at {weather.url}" in lines[0]
    assert not (tmp_path / "out" / "r.jsonl").exists()
    assert not (tmp_path / "server.pid").exists()  # the command never ran

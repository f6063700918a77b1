"""``palaestra serve`` as a user runs it: busy ports, session caps, where the token comes from."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from palaestra.http.announce import parse_ready_line
from palaestra.remote.env import RemoteEnvironmentClient
from palaestra.transport import HttpClient, unix_url
from tests.cli.test_collect_cli import PALAESTRA, rows, run_cli, weather_script
from tests.support.scripted_model import ScriptedModelServer


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.create_server(("127.0.0.1", 0)) as holder:
        yield holder.getsockname()[1]


@pytest.fixture
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(weather_script()) as server:
        yield server


def assert_one_line(done: subprocess.CompletedProcess[str], needle: str) -> None:
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], done.stderr


def test_every_server_on_a_busy_port_says_so_in_one_line(
    tmp_path: Path, busy_port: int, model: ScriptedModelServer
) -> None:
    where = f"cannot listen on 127.0.0.1:{busy_port}: address already in use"
    port = ("--port", str(busy_port))
    assert_one_line(run_cli("serve", "env", "counter", *port, cwd=tmp_path), where)
    agent = ("serve", "agent", "--env", "weather", "--model", model.url)
    assert_one_line(run_cli(*agent, *port, cwd=tmp_path), where)
    assert_one_line(run_cli("serve", "model", "--backend", model.url, *port, cwd=tmp_path), where)


class Served:
    """A ``palaestra serve`` process, up once it printed its ready line."""

    def __init__(
        self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> None:
        self.process = subprocess.Popen(
            [*PALAESTRA, "serve", *args, "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, **(env or {})},
            cwd=cwd,
        )
        assert self.process.stdout is not None
        for line in self.process.stdout:
            facts = parse_ready_line(line.strip())
            if facts is not None:
                self.url = str(facts["url"])
                self.facts = facts
                return
        raise AssertionError(f"serve exited with {self.process.wait()} before it was ready")

    def get(self, route: str, token: str | None = None) -> tuple[int, bytes]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        request = urllib.request.Request(f"{self.url}{route}", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(20)


def test_serve_env_passes_the_session_caps_to_the_server() -> None:
    served = Served("env", "counter", "--max-sessions", "2", "--max-task-bytes", "300")
    try:
        status, body = served.get("/")
        health = orjson.loads(body)
        assert status == 200  # before: "no such option: --max-sessions"
        assert (health["max_sessions"], health["max_task_bytes"]) == (2, 300)
    finally:
        served.stop()
    unlimited = Served("env", "counter", "--max-sessions", "0")
    try:
        assert orjson.loads(unlimited.get("/")[1])["max_sessions"] is None
    finally:
        unlimited.stop()


def test_a_token_file_keeps_the_secret_out_of_argv(tmp_path: Path) -> None:
    secret = tmp_path / "token"
    secret.write_text("file-secret\n")
    no_variable = {"PALAESTRA_SERVER_TOKEN": ""}
    served = Served("env", "counter", "--token-file", str(secret), env=no_variable)
    try:
        assert served.get("/")[0] == 401
        assert served.get("/tools", "wrong")[0] == 401
        assert served.get("/tools", "file-secret")[0] == 200
        argv = Path(f"/proc/{served.process.pid}/cmdline").read_bytes()
        assert b"file-secret" not in argv
    finally:
        served.stop()
    help_text = run_cli("serve", "env", "--help", cwd=tmp_path).stdout
    assert "--token-file" in help_text and "(ps)" in help_text
    empty = tmp_path / "empty"
    empty.write_text("\n")
    done = run_cli("serve", "env", "counter", "--token-file", str(empty), cwd=tmp_path)
    assert_one_line(done, f"--token-file {empty} is empty")


def test_the_cap_defaults_named_in_the_help_are_the_servers() -> None:
    from palaestra.cli.serve.servers import serve_env_command
    from palaestra.serve.env_app import DEFAULT_MAX_SESSIONS, DEFAULT_MAX_TASK_BYTES

    helps = {p.name: p.help or "" for p in serve_env_command.params}
    assert f"Default: {DEFAULT_MAX_SESSIONS}." in helps["max_sessions"]
    assert f"Default: {DEFAULT_MAX_TASK_BYTES} " in helps["max_task_bytes"]


def test_serve_env_listens_on_the_unix_socket_it_is_given(tmp_path: Path) -> None:
    path = tmp_path / "env.sock"
    served = Served("env", "counter", "--unix-socket", str(path))
    try:
        assert served.facts["unix"] == unix_url(str(path))  # before: no such option

        async def over_the_socket() -> tuple[list[str], float | None]:
            remote = await RemoteEnvironmentClient.connect(served.facts["unix"])
            try:
                task = {"responses_create_params": {"input": "x"}, "target_value": 1}
                session = await remote.seed(task)
                await remote.call_tool(session, "increment", {"amount": 1})
                verdict = await remote.verify(session, task, {"id": "r", "output": []})
                return [str(t.get("name")) for t in remote.tools()], verdict.reward
            finally:
                await remote.aclose()

        tools, reward = asyncio.run(over_the_socket())
        assert "increment" in tools and reward == 1.0
    finally:
        served.stop()
    assert not path.exists()  # removed when the server stops


def test_a_unix_socket_path_that_is_taken_is_one_line_and_a_stale_one_is_replaced(
    tmp_path: Path,
) -> None:
    taken = tmp_path / "notes.txt"
    taken.write_text("mine")
    done = run_cli("serve", "env", "counter", "--unix-socket", str(taken), cwd=tmp_path)
    assert_one_line(done, f"cannot listen on {taken}: it exists and is not a socket")
    assert taken.read_text() == "mine"
    stale = tmp_path / "stale.sock"
    with socket.socket(socket.AF_UNIX) as left:  # a killed server's socket: bound, not served
        left.bind(str(stale))
    served = Served("env", "counter", "--unix-socket", str(stale))
    try:
        assert stale.is_socket() and served.facts["unix"] == unix_url(str(stale))
        again = run_cli("serve", "env", "counter", "--unix-socket", str(stale), cwd=tmp_path)
        assert_one_line(again, f"cannot listen on {stale}: a server is listening there")
        assert stale.is_socket()  # the running server's socket is left alone
    finally:
        served.stop()


def test_serve_model_listens_on_the_unix_socket_it_is_given(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    path = tmp_path / "model.sock"
    served = Served("model", "--model", model.url, "--unix-socket", str(path))
    try:
        assert served.facts["unix"] == unix_url(str(path))  # before: no such option

        async def ask() -> int:
            http = HttpClient()
            try:
                listed = await http.request("GET", f"{served.facts['unix']}/v1/models")
                return listed.status
            finally:
                await http.aclose()

        assert asyncio.run(ask()) == 200
    finally:
        served.stop()
    assert not path.exists()


def test_a_model_server_without_a_model_name_lists_its_backends_own(
    model: ScriptedModelServer,
) -> None:
    for flags in (("--model", model.url), ("--model", model.url, "--model", model.url)):
        served = Served("model", *flags, "--port", "0")
        try:
            with urllib.request.urlopen(f"{served.facts['url']}/v1/models", timeout=10) as got:
                listed = orjson.loads(got.read())["data"][0]["id"]
        finally:
            served.stop()
        assert listed == model.model  # before: the backend's URL, refused upstream as a model


def test_a_served_agent_is_closed_book_unless_told_and_its_rows_say_so(
    tmp_path: Path, model: ScriptedModelServer
) -> None:
    """weather has no network: the agent server keeps a task's web_search from the model,
    and the rows a collector writes through it say so, as an in-process run's do."""
    from palaestra import collect

    tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
    params = {"input": "Weather?", "tools": [tool, {"type": "web_search"}]}
    tasks = tmp_path / "t.jsonl"
    tasks.write_bytes(orjson.dumps({"responses_create_params": params}) + b"\n")
    for flags, closed in (((), True), (("--hosted-tools",), False)):
        served = Served("agent", "--env", "weather", "--model", model.url, *flags)
        try:
            collect(agent_url=served.url, input=tasks, output=tmp_path / f"{closed}.jsonl")
        finally:
            served.stop()
        [row] = rows(tmp_path / f"{closed}.jsonl")
        assert row["_palaestra"]["closed_book"] is closed
        assert row["_palaestra"].get("hosted_tools_dropped") == (["web_search"] if closed else None)
    sent = [[t["type"] for t in body["tools"]] for body in model.bodies("/v1/responses")]
    assert sent == [["function"]] * 2 + [["function", "web_search"]] * 2

"""Serving with a ready announcement, on a TCP port and a Unix socket at once."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from palaestra import ToolCallingAgent
from palaestra.envs.counter.environment import Counter
from palaestra.errors import ConfigError
from palaestra.http.announce import listen_unix, serve_announced
from palaestra.remote.env import RemoteEnvironmentClient
from palaestra.serve.env_app import environment_app
from palaestra.transport import unix_url
from tests.envs.test_counter import stepper, tasks


async def test_an_env_server_on_a_unix_socket_runs_rollouts_there_and_removes_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "env.sock"
    app = environment_app(Counter())
    ready: list[str] = []
    stop = asyncio.Event()
    serving = asyncio.create_task(
        serve_announced(
            app, host="127.0.0.1", port=0, on_ready=ready.append, stop=stop, unix_socket=path
        )
    )
    while not ready:
        await asyncio.sleep(0.01)
    assert path.is_socket() and ready[0].startswith("http://127.0.0.1:")
    remote = await RemoteEnvironmentClient.connect(unix_url(str(path)))
    try:
        rows = tasks()
        results = [await ToolCallingAgent().run(row, remote, stepper(row)) for row in rows]
    finally:
        await remote.aclose()
    assert [r.verdict.reward if r.verdict else None for r in results] == [1.0] * len(rows)
    assert len(app.state.client.sessions) == 0  # every session closed
    stop.set()
    await serving
    assert not path.exists()


def test_a_unix_socket_that_cannot_be_bound_is_one_config_error_naming_it(
    tmp_path: Path,
) -> None:
    where = tmp_path / "no-such-dir" / "env.sock"
    with pytest.raises(ConfigError, match=f"cannot listen on {where}"):
        listen_unix(where)


def test_a_stale_socket_is_replaced_and_a_live_one_or_a_file_is_refused(tmp_path: Path) -> None:
    stale = tmp_path / "stale.sock"
    with socket.socket(socket.AF_UNIX) as left:  # a killed server's socket: bound, not served
        left.bind(str(stale))
    with listen_unix(stale) as serving:  # before: "Address already in use"
        assert stale.is_socket()
        with pytest.raises(ConfigError, match="a server is listening there"):
            listen_unix(stale)
        assert stale.is_socket()  # the live server's socket is left alone
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(str(stale))
            serving.accept()[0].close()
    not_a_socket = tmp_path / "notes.txt"
    not_a_socket.write_text("mine")
    with pytest.raises(ConfigError, match="it exists and is not a socket"):
        listen_unix(not_a_socket)
    assert not_a_socket.read_text() == "mine"

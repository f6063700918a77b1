"""``/ws?session_id=``: a socket that drives the episode of an ``/mcp`` session, as OpenEnv
0.10's production clients open it (the real clients run in tests/interop)."""

from __future__ import annotations

from typing import Any

from websockets.sync.client import connect

from tests.serve.test_openenv_app import TASK, ask, rpc, served, ws_url


def create(url: str) -> str:
    call = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {"task": TASK}}
    return str(rpc(url, call)["result"]["session_id"])


def call_tool(url: str, session: str, amount: int) -> Any:
    params = {"name": "increment", "arguments": {"amount": amount}, "session_id": session}
    return rpc(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})


def test_a_socket_attached_to_a_session_drives_its_episode_which_outlives_the_socket() -> None:
    with served() as url:
        session = create(url)
        assert call_tool(url, session, 2)["result"]["data"] == "3"  # over HTTP: 1 + 2
        with connect(f"{ws_url(url)}?session_id={session}") as socket:
            state = ask(socket, "state")["data"]
            assert state == {
                "episode_id": session,
                "step_count": 1,
                "producers": ["policy", "tool"],
            }
            step = {"type": "call_tool", "tool_name": "increment", "arguments": {"amount": 1}}
            assert ask(socket, "step", step)["data"]["observation"]["result"] == "4"
        # the socket is gone, the session's episode is not: 4 + 1
        assert call_tool(url, session, 1)["result"]["data"] == "5"


def test_one_socket_per_session_and_an_unknown_session_is_refused() -> None:
    with served() as url:
        with connect(f"{ws_url(url)}?session_id=nope") as socket:
            refused = socket.recv(timeout=10)
        assert "Unknown session_id: nope" in str(refused)
        session = create(url)
        with connect(f"{ws_url(url)}?session_id={session}") as first:
            assert ask(first, "state")["data"]["episode_id"] == session
            with connect(f"{ws_url(url)}?session_id={session}") as second:
                assert "already has an attached WebSocket" in str(second.recv(timeout=10))


def test_verify_on_an_attached_socket_ends_the_session_too() -> None:
    with served() as url:
        session = create(url)
        with connect(f"{ws_url(url)}?session_id={session}") as socket:
            ask(socket, "step", {"type": "call_tool", "tool_name": "increment",
                                 "arguments": {"amount": 3}})  # fmt: skip
            done = ask(socket, "step", {"type": "verify"})["data"]
            assert done["reward"] == 1.0 and done["done"] is True
        assert "Unknown session_id" in call_tool(url, session, 1)["error"]["message"]

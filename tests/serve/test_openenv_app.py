"""The OpenEnv server of an environment over real HTTP and WebSocket (OpenEnv's message forms)."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
import pytest
from websockets.client import ClientProtocol
from websockets.exceptions import InvalidStatus
from websockets.http11 import Response
from websockets.sync.client import ClientConnection, connect
from websockets.uri import parse_uri

from palaestra import LocalEnvironmentClient
from palaestra.environment.sessions import Session
from palaestra.envs.counter.environment import Counter
from palaestra.http.guard import Guard
from palaestra.http.runner import WS_MAX_MESSAGE_BYTES, BackgroundServer
from palaestra.serve.openenv_app import openenv_app, task_source
from palaestra.types import FailureKind, JsonDict, Verdict

TASK = {"responses_create_params": {"input": "Add 3."}, "initial_value": 1, "target_value": 4}


class GradedCounter(Counter):
    """A counter whose verifier cannot grade tasks marked ``ungradable``."""

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        if session.task.get("ungradable"):
            return Verdict.failed(FailureKind.VERIFIER_ERROR, "cannot grade this answer")
        return super().verify(session, response)


@contextmanager
def served(dataset: list[JsonDict] | None = None, token: str | None = None) -> Iterator[str]:
    environment = GradedCounter()
    app = openenv_app(
        LocalEnvironmentClient(environment),
        task_source(dataset or [], environment),
        name="counter",
        description=environment.description,
        token=token,
    )
    with BackgroundServer(Guard(app, token=token), ws="auto") as server:
        yield server.url


def ask(socket: ClientConnection, kind: str, data: JsonDict | None = None) -> Any:
    message = {"type": kind, **({"data": data} if data is not None else {})}
    socket.send(orjson.dumps(message).decode())  # a text frame, as OpenEnv's client sends
    return orjson.loads(socket.recv(timeout=10))


def ws_url(url: str) -> str:
    return url.replace("http://", "ws://") + "/ws"


def test_an_episode_resets_calls_tools_and_ends_with_the_verifiers_reward() -> None:
    with served() as url, connect(ws_url(url)) as socket:
        reset = ask(socket, "reset", {"task": TASK, "episode_id": "ep-1"})["data"]
        assert reset["observation"]["messages"] == [{"role": "user", "content": "Add 3."}]
        assert [t["name"] for t in reset["observation"]["tools"]] == ["increment", "read_counter"]
        assert "target_value" not in orjson.dumps(reset).decode()  # the task is not shown
        step = ask(
            socket,
            "step",
            {"type": "call_tool", "tool_name": "increment", "arguments": {"amount": 3}},
        )
        assert step["data"] == {
            "observation": {"tool_name": "increment", "result": "4", "error": None},
            "reward": None,
            "done": False,
        }
        state = ask(socket, "state")
        assert state == {
            "type": "state",
            "data": {"episode_id": "ep-1", "step_count": 1, "producers": ["policy", "tool"]},
        }
        done = ask(socket, "step", {"type": "verify", "content": "It is 4."})["data"]
        assert (done["reward"], done["done"]) == (1.0, True)
        assert done["observation"]["verdict"]["final_value"] == 4
        after = ask(socket, "step", {"type": "call_tool", "tool_name": "increment"})
        assert after["type"] == "error" and "send reset first" in after["data"]["message"]


def test_a_wrong_tool_call_is_text_for_the_model_and_an_error_naming_why() -> None:
    with served() as url, connect(ws_url(url)) as socket:
        ask(socket, "reset", {"task": TASK})
        bad = ask(
            socket,
            "step",
            {"type": "call_tool", "tool_name": "increment", "arguments": {"amount": "x"}},
        )
        observation = bad["data"]["observation"]
        assert observation["result"].startswith("Error: invalid arguments for tool 'increment'")
        assert observation["error"] == {
            "error_type": "invalid_args",
            "message": observation["result"],
        }
        unknown = ask(socket, "step", {"type": "call_tool", "tool_name": "decrement"})
        assert unknown["data"]["observation"]["error"]["error_type"] == "tool_not_found"
        done = ask(socket, "step", {"type": "verify"})["data"]
        assert done["reward"] == 0.0 and done["observation"]["verdict"]["final_value"] == 1


def test_a_verdict_that_is_a_failure_is_an_error_with_its_kind_never_a_reward() -> None:
    with served() as url, connect(ws_url(url)) as socket:
        ask(socket, "reset", {"task": {**TASK, "ungradable": True}})
        failed = ask(socket, "step", {"type": "verify"})
        assert failed["type"] == "error" and "reward" not in orjson.dumps(failed).decode()
        assert failed["data"]["failure"]["kind"] == "verifier_error"
        assert "cannot grade this answer" in failed["data"]["message"]


def test_reset_picks_a_served_task_by_index_and_says_so_when_there_is_none() -> None:
    dataset = [TASK, {**TASK, "initial_value": 10}]
    with served(dataset) as url, connect(ws_url(url)) as socket:
        ask(socket, "reset", {"index": 1})
        step = ask(socket, "step", {"type": "call_tool", "tool_name": "read_counter"})
        assert step["data"]["observation"]["result"] == "10"
    with served() as url, connect(ws_url(url)) as socket:
        refused = ask(socket, "reset", {})
        assert refused["data"]["code"] == "VALIDATION_ERROR"
        assert "no tasks" in refused["data"]["message"] and "--tasks" in refused["data"]["message"]


def test_a_reset_index_past_the_served_tasks_is_refused_naming_it_and_the_count() -> None:
    dataset = [TASK, {**TASK, "initial_value": 10}]
    with served(dataset) as url, connect(ws_url(url)) as socket:
        for index in (999, 2, -1):
            refused = ask(socket, "reset", {"index": index})
            assert refused["type"] == "error"  # before: task 999 % 2, silently
            assert refused["data"]["code"] == "VALIDATION_ERROR"
            message = refused["data"]["message"]
            assert f"index {index}" in message and "2 tasks" in message
        not_a_number = ask(socket, "reset", {"index": "1"})
        assert "index" in not_a_number["data"]["message"]
        ask(socket, "reset", {"seed": 999})  # a seed picks among the tasks: any number does
        step = ask(socket, "step", {"type": "call_tool", "tool_name": "read_counter"})
        assert step["data"]["observation"]["result"] == "10"  # 999 % 2
        created = rpc(
            url,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "openenv/session/create",
                "params": {"index": 999},
            },
        )
        assert "index 999" in created["error"]["message"]
        assert "2 tasks" in created["error"]["message"]


def rpc(url: str, body: object, token: str | None = None) -> Any:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(f"{url}/mcp", data=orjson.dumps(body), headers=headers)
    with urllib.request.urlopen(request, timeout=10) as answer:
        return orjson.loads(answer.read())


def test_http_mcp_lists_tools_and_calls_them_in_a_session_it_creates() -> None:
    with served() as url:
        assert rpc(url, {})["error"]["code"] == -32600
        listed = rpc(url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})["result"]["tools"]
        assert listed[0]["name"] == "increment" and "properties" in listed[0]["inputSchema"]
        created = rpc(
            url,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "openenv/session/create",
                "params": {"task": TASK},
            },
        )
        session = created["result"]["session_id"]
        call = {"name": "increment", "arguments": {"amount": 2}, "session_id": session}
        called = rpc(url, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
        assert called["result"]["data"] == "3" and called["result"]["isError"] is False
        closed = {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "openenv/session/close",
            "params": {"session_id": session},
        }
        assert rpc(url, closed)["result"]["closed"] is True
        again = rpc(url, {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": call})
        assert "Unknown session_id" in again["error"]["message"]


def test_with_a_token_the_websocket_and_the_http_routes_require_it() -> None:
    with served([TASK], token="oe-secret") as url:
        with pytest.raises(InvalidStatus), connect(ws_url(url)):
            pass
        with pytest.raises(urllib.error.HTTPError) as refused:
            rpc(url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert refused.value.code == 401
        auth = {"Authorization": "Bearer oe-secret"}
        with connect(ws_url(url), additional_headers=auth) as socket:
            assert ask(socket, "reset", {})["type"] == "observation"
        assert rpc(url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, token="oe-secret")


def test_a_body_past_the_cap_without_a_length_is_a_413() -> None:
    environment = GradedCounter()
    app = openenv_app(
        LocalEnvironmentClient(environment),
        task_source([], environment),
        name="counter",
        description=environment.description,
    )
    body = b'{"jsonrpc": "2.0", "pad": "' + b"x" * 5000 + b'"}'
    request = (
        b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"
    )
    with BackgroundServer(Guard(app, max_body=1000), ws="auto") as server:
        host, port = server.url.removeprefix("http://").split(":")
        # One write of the whole request: the server may answer and close before reading it
        # all, and a client still writing chunks would see a broken pipe instead of the answer.
        with socket.create_connection((host, int(port)), timeout=10) as conn:
            conn.sendall(request)
            status_line = conn.makefile("rb").readline()
    assert status_line.split()[1] == b"413"  # before: 500 (no handler for the guard's refusal)


def test_a_simulated_user_answers_the_model_s_messages_and_its_turns_are_the_user_s() -> None:
    from tests.support.user_envs import Interview

    environment = Interview()
    app = openenv_app(
        LocalEnvironmentClient(environment),
        task_source([], environment),
        name="interview",
        description="a scripted user",
    )
    task = {"responses_create_params": {"input": "hello"}, "turns": ["book it", "thanks"]}
    with BackgroundServer(Guard(app), ws="auto") as server, connect(ws_url(server.url)) as ws:
        ask(ws, "reset", {"task": task})
        first = ask(ws, "step", {"type": "message", "content": "How can I help?"})["data"]
        assert first["observation"] == {
            "recorded": True,
            "user": {"content": "book it", "done": False},
        }
        ask(ws, "step", {"type": "call_tool", "tool_name": "note", "arguments": {"text": "x"}})
        second = ask(ws, "step", {"type": "message", "content": "Booked."})["data"]
        assert second["observation"]["user"] == {"content": "thanks", "done": False}
        producers = ask(ws, "state")["data"]["producers"]
        assert producers == ["policy", "user", "policy", "tool", "policy", "user"]
        done = ask(ws, "step", {"type": "verify"})["data"]
    assert done["reward"] == 1.0  # the user said every turn: heard through the OpenEnv server


def test_a_websocket_with_a_token_that_is_not_ascii_is_refused_not_crashed() -> None:
    with served([TASK], token="oe-secret") as url:
        for wrong in ("Bearer tökén", "Bearer \xff\xfe\x80"):
            with (
                pytest.raises(InvalidStatus) as refused,
                connect(ws_url(url), additional_headers={"Authorization": wrong}),
            ):
                pass
            assert refused.value.response.status_code == 403  # closed before accept
        auth = {"Authorization": "Bearer oe-secret"}
        with connect(ws_url(url), additional_headers=auth) as socket:
            assert ask(socket, "reset", {})["type"] == "observation"


def test_a_message_past_the_size_cap_is_closed_with_1009_and_a_reason_not_dropped() -> None:
    # websockets' own client protocol over a plain socket, driven as a client that writes its
    # whole message before it reads: the order in which a server that closes its socket on
    # unread input resets the connection and the close frame is lost.
    with served([TASK]) as url:
        client = ClientProtocol(parse_uri(ws_url(url)), max_size=None)
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=20) as conn:
            client.send_request(client.connect())
            conn.sendall(b"".join(client.data_to_send()))
            while not any(isinstance(e, Response) for e in client.events_received()):
                client.receive_data(conn.recv(65536))
            client.send_text(b"x" * (40 * 1024 * 1024))
            conn.sendall(b"".join(client.data_to_send()))  # before: reset mid-way
            while (chunk := conn.recv(65536)) != b"":  # before: ConnectionResetError
                client.receive_data(chunk)
        assert client.close_rcvd is not None
        assert client.close_rcvd.code == 1009  # message too big
        assert f"exceeds limit of {WS_MAX_MESSAGE_BYTES} bytes" in client.close_rcvd.reason
        with connect(ws_url(url)) as ws:  # and the server serves on
            assert ask(ws, "reset", {})["type"] == "observation"

"""A palaestra environment served in OpenEnv's protocol (HTTP profile 1.x).

What OpenEnv's clients and ``openenv validate <url>`` use, read from openenv-core 0.3.0
(``env_server/http_server.py``, ``env_client.py``, ``mcp_client.py``, ``cli/_validation.py``)
and checked unchanged in openenv 0.10.0, which adds one thing served here: a production client
opens ``/ws?session_id=<id>`` on the ``/mcp`` session it created, and that socket drives the
session's episode (which outlives the socket).

- ``/ws``: one episode per connection. Messages ``{"type": "reset" | "step" | "state" |
  "close" | "mcp", "data": ...}``; answers ``{"type": "observation", "data": {"observation",
  "reward", "done"}}``, ``{"type": "state", ...}``, ``{"type": "mcp", "data": <JSON-RPC>}`` or
  ``{"type": "error", "data": {"message", "code"}}``.

  ``reset`` data: ``task`` (a task row), else ``index``/``seed`` into the served tasks (else the
  next one), else a task the environment generates from ``seed``. The observation holds the
  prompt as chat ``messages`` and the ``tools`` (never the task: it may hold the answer).
  ``step`` actions: ``{"type": "call_tool", "tool_name", "arguments"}`` and ``{"type":
  "list_tools"}`` (OpenEnv's MCP actions), ``{"type": "message", "content"}`` (the model's text,
  kept in the trajectory; an environment with a simulated user answers it, as
  ``observation.user``: ``{content, done}``) and the terminal ``{"type": "verify"}`` (optionally
  with a final ``content``, or a whole Responses ``response`` to score instead of the recorded
  trajectory): it runs the environment's verifier, answers its reward with ``done: true`` and
  ends the episode. A verdict that is a failure is an error answer naming its kind, never a
  reward. ``state`` says who produced each item of the trajectory so far (``producers``:
  ``policy``, ``tool``, ``user``), as a row's ``producers`` do: only the policy's are trained.
- ``POST /mcp``: JSON-RPC ``tools/list``, ``tools/call`` and OpenEnv's session methods
  (``openenv/session/create`` seeds an episode, ``openenv/session/close``).
- ``GET /health``, ``/metadata``, ``/schema``, ``/openapi.json`` (production mode: no HTTP
  ``/reset``, ``/step``, ``/state``; episodes live on ``/ws``).

With a token, the HTTP routes are behind ``Guard`` and ``/ws`` checks the same bearer token
before it accepts (OpenEnv 0.10's clients send it given ``headers=``; 0.3's send none: serve
without a token for them).
"""

from __future__ import annotations

import contextlib
import itertools
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeGuard

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from palaestra.environment.base import Environment
from palaestra.environment.running.client import EnvironmentClient
from palaestra.errors import InputError, PalaestraError, RolloutFailure
from palaestra.http.guard import BodyTooLarge, bearer_matches
from palaestra.http.json import JSONResponse, error_response
from palaestra.training.openenv_episode import Episode, EpisodeFailed
from palaestra.types import JsonDict

PROFILE_VERSION = "1.0.0"
"""The OpenEnv HTTP profile served (``openapi.json`` ``info.version``; ``1.x`` is what
``openenv validate`` knows)."""
MAX_HTTP_SESSIONS = 1024
"""Episodes ``openenv/session/create`` keeps; the least recently used is closed past it."""

TaskSource = Callable[[JsonDict], JsonDict]
"""Reset data -> the task row of the new episode; ``InputError`` when there is none."""


def task_source(dataset: list[JsonDict], environment: Environment | None) -> TaskSource:
    """Tasks for ``reset``: the given row, the served ``dataset``, or generated ones.

    An ``index`` addresses one served task and must be one of them: a client that asks for a
    task the server does not hold learns so, rather than training on another one. A ``seed``
    only chooses among them (any number picks one).
    """
    cycle: Iterator[int] = itertools.count()

    def pick(data: JsonDict) -> JsonDict:
        if isinstance(data.get("task"), dict):
            return dict(data["task"])
        index, seed = data.get("index"), data.get("seed")
        if index is not None and not _is_int(index):
            raise InputError(f"reset index {index!r} is not an integer", field="index")
        if dataset:
            count = len(dataset)
            if index is None:
                return dataset[(seed if _is_int(seed) else next(cycle)) % count]
            if not 0 <= index < count:
                raise InputError(
                    f"reset index {index} is out of range: this server has {count} "
                    f"task{'s' if count != 1 else ''} (index 0 to {count - 1})",
                    field="index",
                )
            return dataset[index]
        if environment is not None:
            try:
                number = index if index is not None else seed if _is_int(seed) else next(cycle)
                return next(iter(environment.generate_tasks(1, number)))
            except NotImplementedError:
                pass
        raise InputError(
            "this server has no tasks: send one in reset (data.task) or serve with --tasks",
            field="task",
        )

    return pick


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def openenv_app(
    client: EnvironmentClient,
    tasks: TaskSource,
    *,
    name: str,
    description: str,
    token: str | None = None,
) -> Starlette:
    """The OpenEnv server of ``client``'s environment (see the module docstring)."""
    server = _Server(client, tasks, token)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "healthy"})

    async def metadata(request: Request) -> Response:
        return JSONResponse({"name": name, "description": description, "version": PROFILE_VERSION})

    async def schema(request: Request) -> Response:
        return JSONResponse(SCHEMAS)

    async def openapi(request: Request) -> Response:
        return JSONResponse(openapi_document(name))

    return Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/metadata", metadata, methods=["GET"]),
            Route("/schema", schema, methods=["GET"]),
            Route("/openapi.json", openapi, methods=["GET"]),
            Route("/mcp", server.mcp, methods=["POST"]),
            WebSocketRoute("/ws", server.ws),
        ],
        exception_handlers={BodyTooLarge: _too_large},
    )


@dataclass(slots=True)
class _Connection:
    """One ``/ws`` connection: the episode it drives, and the HTTP session it is attached to
    (``?session_id=``), whose episode outlives the socket."""

    attached: str | None
    episode: Episode | None = None


class _Server:
    """The episodes one OpenEnv server holds, and its ``/mcp`` and ``/ws`` endpoints."""

    def __init__(self, client: EnvironmentClient, tasks: TaskSource, token: str | None) -> None:
        self.client = client
        self.tasks = tasks
        self.secret = None if token is None else token.encode("utf-8")
        self.http_episodes: OrderedDict[str, Episode] = OrderedDict()
        self.attachments: set[str] = set()
        """HTTP sessions a socket drives (``/ws?session_id=``): one socket each, as OpenEnv's."""

    async def start(self, data: JsonDict) -> Episode:
        episode_id = data.get("episode_id")
        return await Episode.start(
            self.client, self.tasks(data), str(episode_id) if episode_id else None
        )

    async def end(self, episode: Episode) -> None:
        """Close an episode that is over, and forget the HTTP session that held it."""
        for session_id in [k for k, held in self.http_episodes.items() if held is episode]:
            del self.http_episodes[session_id]
        await _close_quietly(episode)

    async def mcp(self, request: Request) -> Response:
        try:
            call = orjson.loads(await request.body())
        except orjson.JSONDecodeError:
            return JSONResponse(rpc_error(None, -32700, "Parse error"))
        return JSONResponse(await self.http_rpc(call))

    async def http_rpc(self, call: Any) -> JsonDict:
        """One JSON-RPC call on ``/mcp``: OpenEnv's session methods, or a call in a session."""
        if not _is_rpc(call):
            return rpc_error(
                call.get("id") if isinstance(call, dict) else None, -32600, "Invalid Request"
            )
        method, params, call_id = call["method"], call.get("params") or {}, call.get("id")
        if method == "openenv/session/create":
            return await self.create_session(params, call_id)
        session_id = params.get("session_id")
        episode = self.http_episodes.get(session_id) if isinstance(session_id, str) else None
        if method == "openenv/session/close":
            if episode is None:
                return rpc_error(call_id, -32602, f"Unknown session_id: {session_id}")
            await _close_quietly(self.http_episodes.pop(str(session_id)))
            return rpc_result(call_id, {"session_id": session_id, "closed": True})
        if episode is not None:
            self.http_episodes.move_to_end(str(session_id))
        elif session_id is not None:
            return rpc_error(call_id, -32602, f"Unknown session_id: {session_id}")
        return await self.rpc(episode, method, params, call_id)

    async def create_session(self, params: JsonDict, call_id: Any) -> JsonDict:
        """``openenv/session/create``: a new episode; past ``MAX_HTTP_SESSIONS``, the least
        recently used is closed."""
        try:
            created = await self.start(params)
        except Exception as error:
            return rpc_error(call_id, -32000, _message(error))
        self.http_episodes[created.episode_id] = created
        while len(self.http_episodes) > MAX_HTTP_SESSIONS:
            await _close_quietly(self.http_episodes.popitem(last=False)[1])
        return rpc_result(call_id, {"session_id": created.episode_id})

    async def rpc(
        self, episode: Episode | None, method: str, params: JsonDict, call_id: Any
    ) -> JsonDict:
        """``tools/list`` or ``tools/call``, in ``episode`` (``/mcp`` or a ``/ws`` message)."""
        if method == "tools/list":
            tools = episode.tools() if episode is not None else _tools(self.client)
            return rpc_result(call_id, {"tools": tools})
        if method != "tools/call":
            return rpc_error(call_id, -32601, f"Method not found: {method}")
        if episode is None:
            return rpc_error(
                call_id, -32602, "tools/call needs an episode: openenv/session/create, or /ws"
            )
        if not isinstance(params.get("name"), str):
            return rpc_error(call_id, -32602, "Missing 'name' in params")
        try:
            outcome = await episode.call_tool(params["name"], dict(params.get("arguments") or {}))
        except Exception as error:
            return rpc_error(call_id, -32603, _message(error))
        text = [{"type": "text", "text": outcome.text}]
        return rpc_result(
            call_id, {"content": text, "data": outcome.text, "isError": outcome.rejected}
        )

    async def ws(self, socket: WebSocket) -> None:
        """One ``/ws`` connection: its messages answered in turn until it closes."""
        if self.secret is not None and not bearer_matches(_authorization(socket), self.secret):
            await socket.close(code=1008, reason="missing or wrong bearer token")
            return
        await socket.accept()
        connection = await self.attach(socket)
        if connection is not None:
            try:
                while (message := await _receive(socket)) is not None:
                    kind, data = message
                    if kind == "close":
                        break
                    answer = await self.answer(connection, kind, data)
                    await socket.send_text(orjson.dumps(answer).decode())
            except WebSocketDisconnect:
                pass
            finally:
                if connection.attached is not None:
                    self.attachments.discard(connection.attached)  # the session keeps its episode
                elif connection.episode is not None:
                    await _close_quietly(connection.episode)
        await _close_socket(socket)

    async def attach(self, socket: WebSocket) -> _Connection | None:
        """The new connection; attached to the HTTP session its ``?session_id=`` names
        (OpenEnv 0.10's production clients), which must exist and have no other socket.
        None, after an error answer, when it is refused."""
        attached = socket.query_params.get("session_id")
        if attached is None:
            return _Connection(None)
        refusal = (
            f"Unknown session_id: {attached}"
            if attached not in self.http_episodes
            else f"Session {attached} already has an attached WebSocket"
            if attached in self.attachments
            else None
        )
        if refusal is not None:
            await socket.send_text(_error_text("EXECUTION_ERROR", refusal))
            return None
        self.attachments.add(attached)
        return _Connection(attached, self.http_episodes.get(attached) if attached else None)

    async def answer(self, connection: _Connection, kind: Any, data: JsonDict) -> JsonDict:
        """The answer to one ``/ws`` message; what it raised as an error answer (a failed
        rollout is over: its episode ends)."""
        try:
            return await self.act(connection, kind, data)
        except Exception as error:
            if isinstance(error, EpisodeFailed | RolloutFailure) and connection.episode is not None:
                await self.end(connection.episode)
                connection.episode = None
            return _error_answer(error)

    async def act(self, connection: _Connection, kind: Any, data: JsonDict) -> JsonDict:
        if kind == "reset":
            return await self.reset(connection, data)
        if kind == "state":
            return {"type": "state", "data": _state(connection.episode)}
        if kind == "mcp":
            reply = (
                await self.rpc(
                    connection.episode, data["method"], data.get("params") or {}, data.get("id")
                )
                if _is_rpc(data)
                else rpc_error(data.get("id"), -32600, "Invalid Request")
            )
            return {"type": "mcp", "data": reply}
        if kind == "step":
            if connection.episode is None:
                raise InputError("no episode: send reset first", field="type")
            answer, ended = await _step(connection.episode, data)
            if ended:
                await self.end(connection.episode)
                connection.episode = None
            return answer
        raise InputError(
            f"unknown message type {kind!r}: reset, step, state, mcp or close", field="type"
        )

    async def reset(self, connection: _Connection, data: JsonDict) -> JsonDict:
        """A new episode for the connection (and its HTTP session); the old one is closed."""
        if connection.episode is not None:
            await _close_quietly(connection.episode)
            connection.episode = None
        if connection.attached is not None:
            self.http_episodes.pop(connection.attached, None)
        episode = connection.episode = await self.start(data)
        if connection.attached is not None:
            self.http_episodes[connection.attached] = episode
        return _observation({"messages": episode.initial_messages(), "tools": _listed(episode)})


async def _receive(socket: WebSocket) -> tuple[Any, JsonDict] | None:
    """The next message's type and data; None when the client has gone. A frame that is not
    JSON is answered here with an error, and the next one read."""
    while True:
        received = await socket.receive()
        if received["type"] == "websocket.disconnect":
            return None
        try:  # OpenEnv's clients send text frames; bytes are read the same
            message = orjson.loads(received.get("text") or received.get("bytes") or b"")
        except orjson.JSONDecodeError as error:
            await socket.send_text(_error_text("INVALID_JSON", f"Invalid JSON: {error}"))
            continue
        if not isinstance(message, dict):
            return None, {}
        data = message.get("data")
        return message.get("type"), data if isinstance(data, dict) else {}


async def _too_large(request: Request, exc: Exception) -> Response:
    """A body without a length that grew past the guard's cap: 413, as the other servers."""
    return error_response(413, str(exc))


async def _step(episode: Episode, action: JsonDict) -> tuple[JsonDict, bool]:
    """One ``step`` action: its answer, and whether the episode ended."""
    kind = action.get("type")
    if kind == "call_tool":
        name = action.get("tool_name")
        if not isinstance(name, str):
            raise InputError("call_tool needs a 'tool_name' string", field="tool_name")
        outcome = await episode.call_tool(name, dict(action.get("arguments") or {}))
        error = None
        if outcome.rejected:
            known = {tool["name"] for tool in episode.tools()}
            error_type = "invalid_args" if name in known else "tool_not_found"
            error = {"error_type": error_type, "message": outcome.text}
        return _observation({"tool_name": name, "result": outcome.text, "error": error}), False
    if kind == "list_tools":
        return _observation({"tools": _listed(episode)}), False
    if kind == "message":
        episode.say(str(action.get("content") or ""))
        observation: JsonDict = {"recorded": True}
        turn = await episode.user_turn()  # an environment with a simulated user answers
        if turn is not None:
            observation["user"] = {"content": turn.text, "done": turn.done}
        return _observation(observation), False
    if kind == "verify":
        if action.get("content"):
            episode.say(str(action["content"]))
        given = action.get("response")
        verdict = await episode.verify(given if isinstance(given, dict) else None)
        return _observation(
            {"verdict": verdict.to_fields()}, reward=verdict.reward, done=True
        ), True
    raise InputError(
        f"unknown action type {kind!r}: call_tool, list_tools, message or verify", field="type"
    )


def _observation(
    observation: JsonDict, *, reward: float | None = None, done: bool = False
) -> JsonDict:
    return {
        "type": "observation",
        "data": {"observation": observation, "reward": reward, "done": done},
    }


def _state(episode: Episode | None) -> JsonDict:
    if episode is None:
        return {"episode_id": None, "step_count": 0}
    return {
        "episode_id": episode.episode_id,
        "step_count": episode.step_count,
        "producers": episode.producers,  # who produced each item of the trajectory so far
    }


def _tools(client: EnvironmentClient) -> list[JsonDict]:
    from palaestra.training.openenv_episode import mcp_tools

    return mcp_tools(client.tools())


def _listed(episode: Episode) -> list[JsonDict]:
    """The episode's tools as OpenEnv's ``Tool`` serialises them (``input_schema``)."""
    return [
        {"name": t["name"], "description": t["description"], "input_schema": t["inputSchema"]}
        for t in episode.tools()
    ]


def _error_answer(error: Exception) -> JsonDict:
    """The one mapping from what an episode raised to OpenEnv's error answer."""
    data: JsonDict = {"message": _message(error), "code": "EXECUTION_ERROR"}
    if isinstance(error, EpisodeFailed):
        data["failure"] = error.failure.to_json()
    elif isinstance(error, RolloutFailure):
        data["failure"] = {"kind": str(error.kind), "reason": error.reason, "masked": True}
    elif isinstance(error, InputError):
        data["code"] = "VALIDATION_ERROR"
    return {"type": "error", "data": data}


def _error_text(code: str, message: str) -> str:
    return orjson.dumps({"type": "error", "data": {"message": message, "code": code}}).decode()


def _message(error: Exception) -> str:
    if isinstance(error, RolloutFailure) and not isinstance(error, EpisodeFailed):
        return f"rollout failed ({error.kind}): {error.reason}"
    if isinstance(error, PalaestraError):
        return str(error)
    return f"{type(error).__name__}: {error}"


def _is_rpc(call: Any) -> bool:
    return (
        isinstance(call, dict)
        and call.get("jsonrpc") == "2.0"
        and isinstance(call.get("method"), str)
    )


def rpc_result(call_id: Any, result: Any) -> JsonDict:
    return {"jsonrpc": "2.0", "id": call_id, "result": result}


def rpc_error(call_id: Any, code: int, message: str) -> JsonDict:
    return {"jsonrpc": "2.0", "id": call_id, "error": {"code": code, "message": message}}


async def _close_quietly(episode: Episode) -> None:
    # Closing must not hide the answer being sent; a session that was not closed expires.
    with contextlib.suppress(Exception):
        await episode.close()


def _authorization(socket: WebSocket) -> bytes | None:
    """The socket's ``Authorization`` header as sent (bytes: it may not be ASCII)."""
    for name, value in socket.scope["headers"]:
        if name == b"authorization":
            return bytes(value)
    return None


async def _close_socket(socket: WebSocket) -> None:
    with contextlib.suppress(RuntimeError):  # already closed by the client
        await socket.close()


_ACTION_SCHEMA: JsonDict = {
    "title": "PalaestraAction",
    "oneOf": [
        {
            "type": "object",
            "properties": {
                "type": {"const": "call_tool"},
                "tool_name": {"type": "string"},
                "arguments": {"type": "object"},
            },
            "required": ["type", "tool_name"],
        },
        {"type": "object", "properties": {"type": {"const": "list_tools"}}, "required": ["type"]},
        {
            "type": "object",
            "properties": {"type": {"const": "message"}, "content": {"type": "string"}},
            "required": ["type", "content"],
        },
        {
            "type": "object",
            "description": "Terminal: run the environment's verifier; the reward comes back.",
            "properties": {
                "type": {"const": "verify"},
                "content": {"type": "string"},
                "response": {"type": "object"},
            },
            "required": ["type"],
        },
    ],
}
SCHEMAS: JsonDict = {
    "action": _ACTION_SCHEMA,
    "observation": {
        "title": "PalaestraObservation",
        "type": "object",
        "properties": {
            "messages": {"type": "array", "description": "reset: the prompt as chat messages"},
            "tools": {"type": "array"},
            "tool_name": {"type": "string"},
            "result": {"type": "string", "description": "call_tool: the text the model reads"},
            "error": {"type": ["object", "null"]},
            "verdict": {"type": "object", "description": "verify: reward and verifier fields"},
        },
    },
    "state": {
        "title": "PalaestraState",
        "type": "object",
        "properties": {
            "episode_id": {"type": ["string", "null"]},
            "step_count": {"type": "integer", "minimum": 0},
        },
    },
}


def openapi_document(name: str) -> JsonDict:
    def get(summary: str) -> JsonDict:
        return {"get": {"summary": summary, "responses": {"200": {"description": "OK"}}}}

    return {
        "openapi": "3.1.0",
        "info": {"title": f"palaestra environment {name} (OpenEnv)", "version": PROFILE_VERSION},
        "paths": {
            "/health": get("Health check"),
            "/metadata": get("Environment metadata"),
            "/schema": get("Action, observation and state schemas"),
            "/mcp": {
                "post": {"summary": "MCP JSON-RPC", "responses": {"200": {"description": "OK"}}}
            },
        },
    }

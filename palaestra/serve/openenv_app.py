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
    secret = None if token is None else token.encode("utf-8")
    http_episodes: OrderedDict[str, Episode] = OrderedDict()
    attachments: set[str] = set()
    """HTTP sessions a socket drives (``/ws?session_id=``): one socket each, as OpenEnv's."""

    async def start(data: JsonDict) -> Episode:
        episode_id = data.get("episode_id")
        return await Episode.start(client, tasks(data), str(episode_id) if episode_id else None)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "healthy"})

    async def metadata(request: Request) -> Response:
        return JSONResponse({"name": name, "description": description, "version": PROFILE_VERSION})

    async def schema(request: Request) -> Response:
        return JSONResponse(SCHEMAS)

    async def openapi(request: Request) -> Response:
        return JSONResponse(openapi_document(name))

    async def mcp(request: Request) -> Response:
        try:
            call = orjson.loads(await request.body())
        except orjson.JSONDecodeError:
            return JSONResponse(rpc_error(None, -32700, "Parse error"))
        return JSONResponse(await http_rpc(call))

    async def http_rpc(call: Any) -> JsonDict:
        if not _is_rpc(call):
            return rpc_error(
                call.get("id") if isinstance(call, dict) else None, -32600, "Invalid Request"
            )
        method, params, call_id = call["method"], call.get("params") or {}, call.get("id")
        if method == "openenv/session/create":
            try:
                created = await start(params)
            except Exception as error:
                return rpc_error(call_id, -32000, _message(error))
            http_episodes[created.episode_id] = created
            while len(http_episodes) > MAX_HTTP_SESSIONS:
                await _close_quietly(http_episodes.popitem(last=False)[1])
            return rpc_result(call_id, {"session_id": created.episode_id})
        session_id = params.get("session_id")
        episode = http_episodes.get(session_id) if isinstance(session_id, str) else None
        if method == "openenv/session/close":
            if episode is None:
                return rpc_error(call_id, -32602, f"Unknown session_id: {session_id}")
            await _close_quietly(http_episodes.pop(str(session_id)))
            return rpc_result(call_id, {"session_id": session_id, "closed": True})
        if episode is not None:
            http_episodes.move_to_end(str(session_id))
        elif session_id is not None:
            return rpc_error(call_id, -32602, f"Unknown session_id: {session_id}")
        return await rpc(episode, method, params, call_id)

    async def rpc(episode: Episode | None, method: str, params: JsonDict, call_id: Any) -> JsonDict:
        if method == "tools/list":
            tools = episode.tools() if episode is not None else _tools(client)
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

    async def ws(socket: WebSocket) -> None:
        if secret is not None and not bearer_matches(_authorization(socket), secret):
            await socket.close(code=1008, reason="missing or wrong bearer token")
            return
        await socket.accept()
        # OpenEnv 0.10's production clients open the socket with ``?session_id=`` of the HTTP
        # session they created: the socket then drives that episode, which outlives it.
        attached = socket.query_params.get("session_id")
        if attached is not None:
            refusal = (
                f"Unknown session_id: {attached}"
                if attached not in http_episodes
                else f"Session {attached} already has an attached WebSocket"
                if attached in attachments
                else None
            )
            if refusal is not None:
                await socket.send_text(_error_text("EXECUTION_ERROR", refusal))
                await _close_socket(socket)
                return
            attachments.add(attached)
        episode: Episode | None = http_episodes.get(attached) if attached else None
        try:
            while True:
                received = await socket.receive()
                if received["type"] == "websocket.disconnect":
                    break
                try:  # OpenEnv's clients send text frames; bytes are read the same
                    message = orjson.loads(received.get("text") or received.get("bytes") or b"")
                except orjson.JSONDecodeError as error:
                    await socket.send_text(_error_text("INVALID_JSON", f"Invalid JSON: {error}"))
                    continue
                kind = message.get("type") if isinstance(message, dict) else None
                data = message.get("data") if isinstance(message, dict) else None
                data = data if isinstance(data, dict) else {}
                if kind == "close":
                    break
                try:
                    if kind == "reset":
                        if episode is not None:
                            await _close_quietly(episode)
                            episode = None
                        if attached is not None:
                            http_episodes.pop(attached, None)
                        episode = await start(data)
                        if attached is not None:
                            http_episodes[attached] = episode
                        answer = _observation(
                            {"messages": episode.initial_messages(), "tools": _listed(episode)}
                        )
                    elif kind == "state":
                        answer = {"type": "state", "data": _state(episode)}
                    elif kind == "mcp":
                        call = data
                        reply = (
                            await rpc(
                                episode, call["method"], call.get("params") or {}, call.get("id")
                            )
                            if _is_rpc(call)
                            else rpc_error(call.get("id"), -32600, "Invalid Request")
                        )
                        answer = {"type": "mcp", "data": reply}
                    elif kind == "step":
                        if episode is None:
                            raise InputError("no episode: send reset first", field="type")
                        answer, ended = await _step(episode, data)
                        if ended:
                            await end(episode)
                            episode = None
                    else:
                        raise InputError(
                            f"unknown message type {kind!r}: reset, step, state, mcp or close",
                            field="type",
                        )
                except Exception as error:
                    if isinstance(error, EpisodeFailed | RolloutFailure) and episode is not None:
                        await end(episode)  # a failed rollout is over
                        episode = None
                    answer = _error_answer(error)
                await socket.send_text(orjson.dumps(answer).decode())
        except WebSocketDisconnect:
            pass
        finally:
            if attached is not None:
                attachments.discard(attached)  # the HTTP session keeps its episode
            elif episode is not None:
                await _close_quietly(episode)
        await _close_socket(socket)

    async def end(episode: Episode) -> None:
        """Close an episode that is over, and forget the HTTP session that held it."""
        for session_id in [k for k, held in http_episodes.items() if held is episode]:
            del http_episodes[session_id]
        await _close_quietly(episode)

    return Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/metadata", metadata, methods=["GET"]),
            Route("/schema", schema, methods=["GET"]),
            Route("/openapi.json", openapi, methods=["GET"]),
            Route("/mcp", mcp, methods=["POST"]),
            WebSocketRoute("/ws", ws),
        ],
        exception_handlers={BodyTooLarge: _too_large},
    )


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

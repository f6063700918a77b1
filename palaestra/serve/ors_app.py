"""A palaestra environment served in the Open Reward Standard (ORS), for ORS clients.

The routes and shapes are those the ``openreward`` SDK's client asks and its ``Server``
answers (``palaestra.wire.ors`` holds the shapes). One environment is served, under its name
and at the bare paths (the SDK asks ``/tools`` of an environment it names no variant of):

- ``GET /health``, ``/version``, ``/list_environments``;
- ``GET /{env}/splits``, ``POST /{env}/tasks``, ``/num_tasks``, ``/task``, ``/task_range``:
  the served task files, one per split (a task spec is the task row);
- ``GET /{env}/tools``: the environment's tools, and a *terminal tool* that a harness sends
  the model's final plain message through: it runs the environment's verifier and answers its
  reward with ``finished: true`` (the verdict's fields under ``metadata.verdict``). A
  turn-based environment (``StepEnvironment``) has one tool instead, ``act``: each call is a
  step, answered with the step's reward, and the step that ends the episode also carries the
  verdict;
- ``POST /create_session`` (an event stream naming a new session id), ``POST /create`` (seed
  the session's episode from a task spec, or a split and index), ``/ping``, ``/delete``,
  ``/delete_session``; per session ``GET /{env}/prompt``, ``/messages``, ``/task_tools`` and
  ``POST /{env}/call`` (an event stream: ``task_id``, then ``end`` with the result).

A wrong call of a tool (unknown name, wrong arguments, after the episode finished) is a
``RunToolError`` with its ``reason``; a tool that broke, or a verdict that is a failure, is the
stream's ``error`` event, ``rollout failed (<kind>): <reason>``, and ends the episode: never a
reward. A request that is wrong (unknown split, index out of range, no session) answers 400,
404 or 409 with ``{"detail": ...}``. With a token, the SDK's ``X-API-Key`` may carry it
(``ApiKeyAsBearer``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from palaestra.collection.tasks import load_dataset
from palaestra.environment.base import Environment
from palaestra.environment.running.client import EnvironmentClient, StepEnvironmentClient
from palaestra.errors import ConfigError, InputError, PalaestraError, RolloutFailure
from palaestra.http.json import JSONResponse
from palaestra.training.openenv_episode import Episode, EpisodeFailed
from palaestra.types import JsonDict, Producer, Verdict, user_message
from palaestra.wire import ors

VERSION = "palaestra-ors-1"
MAX_SESSIONS = 4096
"""Live episodes at once; past it ``/create`` answers 503 until some are deleted or expire."""
MAX_CALLS_KEPT = 1024
"""Finished calls kept so a client whose stream broke can ask for the result again
(``task_id``)."""
STEP_TOOL = "act"
TERMINAL_TOOL = "submit_answer"
TERMINAL_ARG = "answer"


class Refused(PalaestraError):
    """A request ORS answers with a status and ``{"detail": ...}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class OrsEpisode:
    """One session's episode: a tool-calling one, or a turn-based one (``act`` steps)."""

    def __init__(self, episode: Episode, *, turn_based: bool, first: str | None) -> None:
        self.episode = episode
        self.turn_based = turn_based
        self.first_observation = first
        self.finished = False
        self.touched = time.monotonic()
        self._turn = asyncio.Lock()
        """One call at a time: a session's state is the environment's, used by one call."""

    def messages(self) -> list[JsonDict]:
        messages = self.episode.initial_messages()
        if self.first_observation is not None:
            messages.append({"role": "user", "content": self.first_observation})
        return messages

    def tools(self) -> list[JsonDict]:
        if self.turn_based:
            return [STEP_TOOL_SPEC]
        return [
            {
                "type": "function",
                "name": t["name"],
                "description": t["description"],
                "parameters": t["inputSchema"],
            }
            for t in self.episode.tools()
        ]

    def terminal(self) -> JsonDict | None:
        return None if self.turn_based else terminal_spec(self.tools())

    def terminal_name(self) -> str:
        return str(terminal_spec(self.tools())["name"])

    async def call(self, name: str, arguments: JsonDict) -> JsonDict:
        """One ``/call``: a result, or ``RolloutFailure``/``EpisodeFailed`` (the episode is
        then over). Calls of one session run in turn, as they arrived."""
        async with self._turn:
            return await self._call(name, arguments)

    async def _call(self, name: str, arguments: JsonDict) -> JsonDict:
        if self.finished:
            message = f"'{name}' was not run: the episode has finished"
            return ors.call_refused(message, "episode_finished")
        if self.turn_based:
            return await self._step(name, arguments)
        if name == self.terminal_name():
            answer = arguments.get(TERMINAL_ARG, "")
            if not isinstance(answer, str):
                return ors.call_refused(f"'{TERMINAL_ARG}' must be a string", "input_validation")
            if answer:
                self.episode.say(answer)
            return self._verdict("", await self._verify())
        outcome = await self.episode.call_tool(name, arguments)
        if outcome.rejected:
            known = {t["name"] for t in self.episode.tools()}
            return ors.call_refused(
                outcome.text, "input_validation" if name in known else "not_found"
            )
        return ors.call_success(outcome.text, metadata=None)

    async def _step(self, name: str, arguments: JsonDict) -> JsonDict:
        if name != STEP_TOOL:
            return ors.call_refused(
                f"{name!r} is not a valid tool: call '{STEP_TOOL}'", "not_found"
            )
        action = arguments.get("action")
        if not isinstance(action, str) or set(arguments) - {"action"}:
            return ors.call_refused(
                "act takes one argument, 'action': your turn as text", "input_validation"
            )
        client = self.episode.client
        assert isinstance(client, StepEnvironmentClient)
        self.episode.say(action)
        step = await client.step(self.episode.session_id, action)
        self.episode.items.append(user_message(step.observation))
        self.episode.producers.append(Producer.ENVIRONMENT)
        if not (step.terminated or step.truncated):
            return ors.call_success(step.observation, reward=float(step.reward), metadata=None)
        return self._verdict(step.observation, await self._verify(), reward=float(step.reward))

    async def _verify(self) -> Verdict:
        self.finished = True
        return await self.episode.verify()

    def _verdict(self, text: str, verdict: Verdict, *, reward: float | None = None) -> JsonDict:
        fields = verdict.to_fields()
        summary = text or f"The episode is over: reward {verdict.reward:g}."
        return ors.call_success(
            summary,
            reward=verdict.reward if reward is None else reward,
            finished=True,
            metadata={"verdict": fields},
        )


TERMINAL_TEXT = (
    "Your final answer: the episode ends and is scored (a harness sends the model's final "
    "plain message here)."
)
STEP_TOOL_SPEC: JsonDict = {
    "type": "function",
    "name": STEP_TOOL,
    "description": "Take your turn: the environment answers with what follows and its reward.",
    "parameters": {
        "type": "object",
        "properties": {"action": {"type": "string", "description": "Your turn, as text."}},
        "required": ["action"],
        "additionalProperties": False,
    },
}


GENERATED_TASKS = 100
"""Tasks an environment that only generates them serves (split ``test``, seed 0)."""


def served_splits(
    files: dict[str, Path], default: Path | None, environment: Environment
) -> dict[str, list[JsonDict]]:
    """The splits served: each named task file, else ``default`` as ``test``, else tasks the
    environment generates; a ``ConfigError`` when there are none (a bad line: one naming it)."""
    if files:
        return {name: load_dataset(path) for name, path in files.items()}
    if default is not None:
        return {"test": load_dataset(default)}
    try:
        return {"test": list(environment.generate_tasks(GENERATED_TASKS, 0))}
    except NotImplementedError:
        raise ConfigError(
            f"environment '{environment.name}' has no example tasks: serve a task file "
            "(--tasks FILE, or --split NAME=FILE)"
        ) from None


def terminal_spec(tools: list[JsonDict]) -> JsonDict:
    """The terminal tool beside ``tools`` (renamed should one of them have its name)."""
    names = {tool.get("name") for tool in tools}
    name = TERMINAL_TOOL if TERMINAL_TOOL not in names else f"palaestra_{TERMINAL_TOOL}"
    return {"name": name, "arg": TERMINAL_ARG, "description": TERMINAL_TEXT}


def ors_app(
    client: EnvironmentClient,
    splits: dict[str, list[JsonDict]],
    *,
    name: str,
    turn_based: bool,
    session_ttl: float = 3600.0,
) -> Starlette:
    """The ORS server of ``client``'s environment over ``splits`` (module docstring)."""
    episodes: OrderedDict[str, OrsEpisode] = OrderedDict()
    """Live episodes by session id (seeded by ``/create``)."""
    opened: OrderedDict[str, None] = OrderedDict()
    """Session ids ``/create_session`` gave that have no episode yet (the oldest forgotten
    past ``MAX_SESSIONS``)."""
    calls: OrderedDict[str, tuple[str, asyncio.Task[JsonDict]]] = OrderedDict()
    """Calls by ``task_id``: the session that made each, and its run."""
    env_name = name.lower()

    def check_env(request: Request) -> None:
        asked = request.path_params.get("env")
        if asked is not None and str(asked).lower() != env_name:
            raise Refused(404, f"unknown environment {asked!r}: this server serves {env_name!r}")

    def split_of(split: object) -> list[JsonDict]:
        if not isinstance(split, str) or split not in splits:
            known = ", ".join(splits) or "none"
            raise Refused(400, f"Invalid split {split!r}: this server has splits {known}")
        return splits[split]

    def task_at(split: object, index: object) -> JsonDict:
        tasks = split_of(split)
        if not isinstance(index, int) or isinstance(index, bool):
            raise Refused(400, f"Invalid index {index!r}: an integer is required")
        if not -len(tasks) <= index < len(tasks):
            raise Refused(
                400,
                f"Invalid index {index}: split {split!r} has {len(tasks)} tasks "
                f"(0 to {len(tasks) - 1})",
            )
        return tasks[index]

    def episode_of(request: Request) -> tuple[str, OrsEpisode]:
        sid = session_id(request)
        episode = episodes.get(sid)
        if episode is None:
            status = 404 if sid not in opened else 409
            raise Refused(status, "Active environment not found: POST /create first")
        episode.touched = time.monotonic()
        return sid, episode

    async def sweep() -> None:
        """Close the episodes no one touched for ``session_ttl`` seconds."""
        limit = time.monotonic() - session_ttl
        for sid in [sid for sid, e in episodes.items() if e.touched < limit]:
            await _close_quietly(episodes.pop(sid))

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def version(request: Request) -> Response:
        return JSONResponse({"version": VERSION, "build_sha": None})

    async def list_environments(request: Request) -> Response:
        return JSONResponse([env_name])

    async def tools(request: Request) -> Response:
        check_env(request)
        listed = [STEP_TOOL_SPEC] if turn_based else client.tools()
        terminal = None if turn_based else terminal_spec(listed)
        return JSONResponse(ors.tools_answer(listed, terminal))

    async def list_splits(request: Request) -> Response:
        check_env(request)
        return JSONResponse([ors.split_entry(split) for split in splits])

    async def list_tasks(request: Request) -> Response:
        check_env(request)
        body = await _body(request)
        return JSONResponse({"tasks": split_of(body.get("split")), "env_name": env_name})

    async def num_tasks(request: Request) -> Response:
        check_env(request)
        body = await _body(request)
        return JSONResponse({"num_tasks": len(split_of(body.get("split")))})

    async def get_task(request: Request) -> Response:
        check_env(request)
        body = await _body(request)
        return JSONResponse(
            {"task": task_at(body.get("split"), body.get("index")), "env_name": env_name}
        )

    async def task_range(request: Request) -> Response:
        check_env(request)
        body = await _body(request)
        tasks = split_of(body.get("split"))
        start, stop = body.get("start"), body.get("stop")
        for field, value in (("start", start), ("stop", stop)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise Refused(400, f"Invalid index range: {field} {value!r} is not an integer")
        return JSONResponse({"tasks": tasks[start:stop], "env_name": env_name})

    async def create_session(request: Request) -> Response:
        sid = uuid.uuid4().hex
        opened[sid] = None
        while len(opened) > MAX_SESSIONS:
            opened.popitem(last=False)
        events = ors.sse_event("task_id", sid) + ors.sse_event("end", "")
        return Response(events, media_type="text/event-stream", headers=_NO_CACHE)

    async def create(request: Request) -> Response:
        sid = session_id(request)
        if sid in episodes:
            raise Refused(400, "Session already exists")
        body = await _body(request)
        unknown = set(body) - {"env_name", "task_spec", "split", "index", "toolset_name", "env"}
        if unknown:
            raise Refused(400, f"create: unknown field {sorted(unknown)[0]!r}")
        if body.get("env_name") is not None and str(body["env_name"]).lower() != env_name:
            raise Refused(404, f"unknown environment {body['env_name']!r}")
        if body.get("toolset_name") is not None:
            raise Refused(400, "create: toolsets are not served (toolset_name)")
        spec, split, index = body.get("task_spec"), body.get("split"), body.get("index")
        by_index = split is not None and index is not None
        if (spec is not None) == by_index or (split is None) != (index is None):
            raise Refused(400, "create: give either task_spec or both split and index")
        if spec is not None and not isinstance(spec, dict):
            raise Refused(400, "create: task_spec must be a JSON object")
        task = dict(spec) if spec is not None else task_at(split, index)
        await sweep()
        if len(episodes) >= MAX_SESSIONS:
            raise Refused(503, f"this server holds {MAX_SESSIONS} sessions: delete some first")
        episodes[sid] = await start_episode(task)
        opened.pop(sid, None)
        return JSONResponse({"sid": sid})

    async def start_episode(task: JsonDict) -> OrsEpisode:
        try:
            episode = await Episode.start(client, task)
        except InputError as error:
            raise Refused(400, f"create: the task is not usable: {error}") from None
        except RolloutFailure as failure:
            raise Refused(500, ors.failure_message(str(failure.kind), failure.reason)) from None
        first = None
        if turn_based:
            assert isinstance(client, StepEnvironmentClient)
            try:
                first = await client.reset(episode.session_id)
            except RolloutFailure as failure:
                await _close_quietly_episode(episode)
                raise Refused(500, ors.failure_message(str(failure.kind), failure.reason)) from None
        return OrsEpisode(episode, turn_based=turn_based, first=first)

    async def ping(request: Request) -> Response:
        episode_of(request)
        return JSONResponse({"status": "ok"})

    async def delete(request: Request) -> Response:
        sid = session_id(request)
        opened.pop(sid, None)
        episode = episodes.pop(sid, None)
        if episode is not None:
            await _close_quietly(episode)
        return JSONResponse({"sid": sid})

    async def delete_session(request: Request) -> Response:
        return await delete(request)

    async def prompt(request: Request) -> Response:
        check_env(request)
        _, episode = episode_of(request)
        return JSONResponse(ors.prompt_blocks(episode.messages()))

    async def messages(request: Request) -> Response:
        check_env(request)
        _, episode = episode_of(request)
        return JSONResponse(ors.prompt_messages(episode.messages()))

    async def task_tools(request: Request) -> Response:
        check_env(request)
        _, episode = episode_of(request)
        return JSONResponse(ors.tools_answer(episode.tools(), episode.terminal()))

    async def call(request: Request) -> Response:
        check_env(request)
        sid, episode = episode_of(request)
        body = await _body(request)
        task_id = body.get("task_id")
        if task_id is not None:  # a client whose stream broke asks for the same call again
            made = calls.get(str(task_id))
            if made is None or made[0] != sid:  # another session's call is not this one's
                return _stream_of([ors.sse_event("error", "unknown task_id")])
            running = made[1]
        else:
            tool, arguments = body.get("name"), body.get("input", {})
            if not isinstance(tool, str):
                raise Refused(400, "call: 'name' must be a string")
            if not isinstance(arguments, dict):
                raise Refused(400, "call: 'input' must be a JSON object")
            task_id = uuid.uuid4().hex
            running = asyncio.ensure_future(run_call(episode, tool, arguments))
            running.add_done_callback(_retrieved)  # its stream may be gone: no warning then
            calls[task_id] = (sid, running)
            while len(calls) > MAX_CALLS_KEPT:
                calls.popitem(last=False)
        return StreamingResponse(
            _call_events(str(task_id), running), media_type="text/event-stream", headers=_NO_CACHE
        )

    async def run_call(episode: OrsEpisode, tool: str, arguments: JsonDict) -> JsonDict:
        try:
            return await episode.call(tool, arguments)
        except (RolloutFailure, EpisodeFailed):
            episode.finished = True  # a failed rollout is over; its session stays until deleted
            raise

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/version", version, methods=["GET"]),
        Route("/list_environments", list_environments, methods=["GET"]),
        Route("/create_session", create_session, methods=["POST"]),
        Route("/create", create, methods=["POST"]),
        Route("/ping", ping, methods=["POST"]),
        Route("/delete", delete, methods=["POST"]),
        Route("/delete_session", delete_session, methods=["POST"]),
    ]
    per_env = [
        ("/tools", tools, "GET"),
        ("/splits", list_splits, "GET"),
        ("/tasks", list_tasks, "POST"),
        ("/num_tasks", num_tasks, "POST"),
        ("/task", get_task, "POST"),
        ("/task_range", task_range, "POST"),
        ("/prompt", prompt, "GET"),
        ("/messages", messages, "GET"),
        ("/task_tools", task_tools, "GET"),
        ("/call", call, "POST"),
    ]
    for path, handler, method in per_env:
        routes.append(Route(path, handler, methods=[method]))
        routes.append(Route("/{env}" + path, handler, methods=[method]))

    async def closing() -> None:
        for episode in list(episodes.values()):
            await _close_quietly(episode)
        episodes.clear()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await closing()

    return Starlette(routes=routes, exception_handlers={Refused: _refused}, lifespan=lifespan)


class ApiKeyAsBearer:
    """ASGI middleware: the SDK's clients send their key as ``X-API-Key``; where no
    ``Authorization`` is sent, it stands for the bearer token, so a server started with
    ``--token`` is reachable by them (``palaestra.http.guard.Guard`` checks it, inside)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = list(scope.get("headers", ()))
            names = {name for name, _ in headers}
            if b"authorization" not in names:
                key = next((value for name, value in headers if name == b"x-api-key"), None)
                if key:
                    headers.append((b"authorization", b"Bearer " + key))
                    scope = {**scope, "headers": headers}
        await self.app(scope, receive, send)


_NO_CACHE = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def session_id(request: Request) -> str:
    sid = request.headers.get(ors.SESSION_HEADER, "").strip()
    if not sid:
        raise Refused(400, f"{ors.SESSION_HEADER} header is required")
    return sid


async def _body(request: Request) -> JsonDict:
    raw = await request.body()
    try:
        body = orjson.loads(raw or b"{}")
    except orjson.JSONDecodeError as error:
        raise Refused(400, f"the body is not JSON: {error}") from None
    if not isinstance(body, dict):
        raise Refused(400, "the body must be a JSON object")
    return body


async def _call_events(task_id: str, running: asyncio.Task[JsonDict]) -> AsyncIterator[bytes]:
    yield ors.sse_event("task_id", task_id)
    while not running.done():
        done, _ = await asyncio.wait({running}, timeout=ors.PING_INTERVAL)
        if not done:
            yield ors.SSE_PING
    error = running.exception()
    if error is None:
        yield ors.sse_event("end", orjson.dumps(running.result()).decode())
    else:
        yield ors.sse_event("error", _failure_text(error))


def _retrieved(task: asyncio.Task[JsonDict]) -> None:
    if not task.cancelled():
        task.exception()


def _failure_text(error: BaseException) -> str:
    if isinstance(error, EpisodeFailed):
        return ors.failure_message(error.failure.kind.value, error.failure.reason)
    if isinstance(error, RolloutFailure):
        return ors.failure_message(str(error.kind), error.reason)
    return ors.failure_message("internal_error", f"{type(error).__name__}: {error}")


def _stream_of(events: list[bytes]) -> Response:
    return Response(b"".join(events), media_type="text/event-stream", headers=_NO_CACHE)


async def _refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Refused)
    return JSONResponse(ors.detail(str(exc)), status_code=exc.status)


async def _close_quietly(episode: OrsEpisode) -> None:
    await _close_quietly_episode(episode.episode)


async def _close_quietly_episode(episode: Episode) -> None:
    # Closing must not hide the answer being sent; a session that was not closed expires.
    with contextlib.suppress(Exception):
        await episode.close()

"""Reaching an Open Reward Standard server: what it lists, and one episode's session.

Listing (environments, splits, tasks, tools, each task's prompt) happens once, before a run
starts, so it is plain blocking HTTP (``Catalogue``); a refusal or an unreachable server is a
one-line ``ConfigError`` naming the URL. Episodes run on the event loop through palaestra's
HTTP client (``Sessions``); what goes wrong there is an ``OrsServerError`` whose ``kind``
(a failure kind, when the server said one) the environment turns into an explicit failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson

from palaestra.errors import ConfigError, PalaestraError
from palaestra.transport import HttpClient, TransportError
from palaestra.types import JsonDict
from palaestra.wire import ors

T = TypeVar("T")
LIST_TIMEOUT = 60.0
"""Seconds one listing request may take."""
STARTING_PATIENCE = 300.0
"""Seconds a call waits for a session the server says is still starting (503, SDK servers
answer so while an environment's ``setup`` runs)."""


class OrsServerError(PalaestraError):
    """A request of an episode that the server refused or never answered.

    ``kind`` is the failure kind the server named (``rollout failed (<kind>): ...``, as
    palaestra's ORS server says it), else None.
    """

    def __init__(self, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class OrsAddress:
    """Where the environment is: the server's ``base`` URL, the environment's name and split
    (empty: the first the server lists)."""

    base: str
    environment: str = ""
    split: str = ""


def parse_address(spec: str) -> OrsAddress:
    """``http://host:port[/ENV][?split=NAME]`` as an address; a one-line ``ConfigError``."""
    parts = urllib.parse.urlsplit(spec)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(
            f"ors: needs a server URL: --env ors:http://127.0.0.1:8080[/ENV][?split=NAME], "
            f"not {spec!r}"
        )
    query = urllib.parse.parse_qs(parts.query)
    unknown = set(query) - {"split"}
    if unknown:
        raise ConfigError(f"ors:{spec}: unknown query parameter {sorted(unknown)[0]!r} (split)")
    path = parts.path.strip("/")
    prefix, _, environment = path.rpartition("/")
    base = urllib.parse.urlunsplit((parts.scheme, parts.netloc, prefix and f"/{prefix}", "", ""))
    return OrsAddress(base, environment, (query.get("split") or [""])[-1])


class Catalogue:
    """Blocking requests for what a server lists, before a run (module docstring)."""

    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/")

    def environments(self) -> list[str]:
        listed = self._json("GET", "/list_environments")
        if not isinstance(listed, list) or not all(isinstance(n, str) for n in listed):
            raise self._bad("/list_environments", "expected a list of names")
        return list(listed)

    def splits(self, environment: str) -> list[str]:
        return self._read(f"/{environment}/splits", ors.split_names, self._json_get)

    def tasks(self, environment: str, split: str) -> list[JsonDict]:
        answer = self._json("POST", f"/{environment}/tasks", {"split": split})
        tasks = answer.get("tasks") if isinstance(answer, dict) else None
        if not isinstance(tasks, list) or not all(isinstance(t, dict) for t in tasks):
            raise self._bad(f"/{environment}/tasks", "'tasks' is not a list of objects")
        return tasks

    def tools(self, environment: str) -> tuple[list[JsonDict], JsonDict | None]:
        """The tools as Responses function tools, and the terminal tool (or None)."""
        answer = self._json("GET", f"/{environment}/tools")
        if not isinstance(answer, dict) or not isinstance(answer.get("tools"), list):
            raise self._bad(f"/{environment}/tools", "no 'tools' list")
        try:
            tools = [ors.function_tool(spec) for spec in answer["tools"]]
        except ors.OrsProtocolError as error:
            raise self._bad(f"/{environment}/tools", str(error)) from None
        terminal = answer.get("terminal_tool")
        if terminal is not None and not (
            isinstance(terminal, dict) and isinstance(terminal.get("name"), str)
        ):
            raise self._bad(f"/{environment}/tools", "'terminal_tool' has no name")
        return tools, terminal

    def prompt(self, environment: str, task_spec: JsonDict) -> list[JsonDict]:
        """The task's prompt as chat messages: a session is opened for it and deleted."""
        sid = self._session()
        try:
            self._json("POST", "/create", {"env_name": environment, "task_spec": task_spec}, sid)
            try:
                return self._read(
                    f"/{environment}/messages",
                    ors.chat_messages,
                    lambda path: self._json("GET", path, None, sid),
                )
            except _NotFound:  # a server older than /messages: its prompt, as the user's
                blocks = self._json("GET", f"/{environment}/prompt", None, sid)
                try:
                    return [{"role": "user", "content": ors.blocks_text(blocks)}]
                except ors.OrsProtocolError as error:
                    raise self._bad(f"/{environment}/prompt", str(error)) from None
        finally:
            for path in ("/delete", "/delete_session"):
                with contextlib.suppress(ConfigError):
                    self._json("POST", path, {}, sid)

    def _session(self) -> str:
        body = self._request("POST", "/create_session", {}, None)
        for event, data in ors.sse_events(body):
            if event == "task_id" and data.strip():
                return data.strip()
        raise self._bad("/create_session", "the stream named no session (task_id)")

    def _json_get(self, path: str) -> Any:
        return self._json("GET", path)

    def _read(self, path: str, decode: Callable[[Any], T], fetch: Callable[[str], Any]) -> T:
        try:
            return decode(fetch(path))
        except ors.OrsProtocolError as error:
            raise self._bad(path, str(error)) from None

    def _json(
        self, method: str, path: str, body: JsonDict | None = None, sid: str | None = None
    ) -> Any:
        raw = self._request(method, path, body, sid)
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise self._bad(path, "the answer is not JSON") from None

    def _request(self, method: str, path: str, body: JsonDict | None, sid: str | None) -> bytes:
        headers = {"Content-Type": "application/json"}
        if sid is not None:
            headers[ors.SESSION_HEADER] = sid
        data = None if method == "GET" else orjson.dumps(body or {})
        request = urllib.request.Request(
            self.base + path, data=data, headers=headers, method=method
        )
        try:
            with urllib.request.urlopen(request, timeout=LIST_TIMEOUT) as answer:
                return bytes(answer.read())
        except urllib.error.HTTPError as error:
            said = ors.detail_of(error.read())
            if error.code == 404 and path.endswith("/messages"):
                raise _NotFound(said) from None
            raise ConfigError(f"ors: {self.base}{path} answered {error.code}: {said}") from None
        except (urllib.error.URLError, OSError, TimeoutError) as error:
            reason = getattr(error, "reason", error)
            raise ConfigError(
                f"ors: the server at {self.base} cannot be reached: {reason}"
            ) from None

    def _bad(self, path: str, problem: str) -> ConfigError:
        return ConfigError(f"ors: {self.base}{path} is not an ORS answer: {problem}")


class _NotFound(ConfigError):
    """A 404 for a route some servers lack."""


class Sessions:
    """One environment's episodes on a server, on the event loop (module docstring)."""

    def __init__(self, base: str, environment: str, *, timeout: float) -> None:
        self.base = base.rstrip("/")
        self.environment = environment
        self.timeout = timeout
        self._http: HttpClient | None = None

    @property
    def http(self) -> HttpClient:
        if self._http is None:
            self._http = HttpClient()
        return self._http

    async def open(self, task_spec: JsonDict) -> str:
        """A new session seeded with ``task_spec``; its id."""
        body = await self._post("/create_session", {}, None)
        sid = next((d.strip() for e, d in ors.sse_events(body) if e == "task_id"), "")
        if not sid:
            raise OrsServerError(f"{self.base}/create_session named no session")
        await self._post("/create", {"env_name": self.environment, "task_spec": task_spec}, sid)
        return sid

    async def call(self, sid: str, name: str, arguments: JsonDict) -> ors.CallResult:
        """One tool call; ``OrsServerError`` when the server failed (its ``error`` event,
        a refusal, no answer), never a result it did not give."""
        path = f"/{self.environment}/call"
        deadline = time.monotonic() + STARTING_PATIENCE
        while True:
            try:
                body = await self._post(path, {"name": name, "input": arguments}, sid)
                break
            except _Starting as starting:
                if time.monotonic() + starting.wait > deadline:
                    raise OrsServerError(f"{self.base}{path}: the session never started") from None
                await asyncio.sleep(starting.wait)
        try:
            event, data = ors.stream_result(ors.sse_events(body))
            if event == "error":
                kind, reason = ors.parse_failure(data)
                raise OrsServerError(reason if kind else data, kind)
            return ors.call_result(orjson.loads(data))
        except (ors.OrsProtocolError, orjson.JSONDecodeError) as error:
            raise OrsServerError(f"{self.base}{path} is not an ORS answer: {error}") from None

    async def close(self, sid: str) -> None:
        for path in ("/delete", "/delete_session"):
            with contextlib.suppress(OrsServerError):
                await self._post(path, {}, sid)

    async def aclose(self) -> None:
        if self._http is not None:
            http, self._http = self._http, None
            await http.aclose()

    async def _post(self, path: str, body: JsonDict, sid: str | None) -> bytes:
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if sid is not None:
            headers[ors.SESSION_HEADER] = sid
        try:
            answer = await self.http.request(
                "POST",
                self.base + path,
                body=orjson.dumps(body),
                headers=headers,
                read_timeout=self.timeout,
            )
        except (TransportError, TimeoutError) as error:
            raise OrsServerError(f"the ORS server at {self.base} did not answer: {error}") from None
        if answer.status == 503 and answer.headers.get("x-backend-state") == "starting":
            retry = answer.headers.get("retry-after", "")
            raise _Starting(float(retry) if retry.isdigit() else 2.0)
        if answer.status >= 300:
            said = ors.detail_of(answer.body)
            raise OrsServerError(f"{self.base}{path} answered {answer.status}: {said}")
        return answer.body


class _Starting(PalaestraError):
    """The server says the session is still starting: ask again after ``wait`` seconds."""

    def __init__(self, wait: float) -> None:
        super().__init__(wait)
        self.wait = min(max(wait, 0.1), 10.0)

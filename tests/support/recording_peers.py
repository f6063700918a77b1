"""Stand-ins for the servers of peers, which write down every request and the status it got.

- ``nemo-gym``: a NeMo Gym 0.4 resources server (FastAPI): ``GET /`` liveness, sessions by
  cookie, one route per tool, ``/verify``, no ``/health``, no ``/tools``, no
  ``/close_session``; its routes listed in ``GET /openapi.json`` as FastAPI lists them (its
  liveness route is left out of that list, as NeMo Gym does).
- ``nel``: a ``nel serve`` benchmark server (FastAPI): ``GET /health``, ``GET /dataset_size``,
  ``/seed_session`` (``{idx}`` or a task row), ``/verify``, and nothing else; no ``GET /``.

Anything else answers 404, as those servers do. Each request is appended to ``log`` as
``METHOD PATH STATUS``. ``python -m tests.support.recording_peers KIND PORT LOG`` serves one.
"""

from __future__ import annotations

import secrets
import sys
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

TASKS = [{"question": "2+2?", "expected_answer": "4"}, {"question": "3+3?", "expected_answer": "6"}]


def _openapi(paths: dict[str, str]) -> Route:
    document = {
        "openapi": "3.1.0",
        "info": {"title": "FastAPI", "version": "0.1.0"},
        "paths": {path: {method: {"responses": {}}} for path, method in paths.items()},
    }
    return Route("/openapi.json", lambda r: JSONResponse(document), methods=["GET"])


def nemo_gym_app() -> Starlette:
    counters: dict[str, int] = {}

    async def seed(request: Request) -> Response:
        session = secrets.token_hex(8)
        counters[session] = 0
        response = JSONResponse({})
        response.set_cookie("session", session)
        return response

    async def increment(request: Request) -> Response:
        body = await request.json()
        session = request.cookies.get("session", "")
        if session not in counters:
            return JSONResponse({"detail": "no session"}, status_code=400)
        counters[session] += int(body.get("amount", 1))
        return JSONResponse({"value": counters[session]})

    async def verify(request: Request) -> Response:
        body = await request.json()
        value = counters.get(request.cookies.get("session", ""), -1)
        return JSONResponse({**body, "reward": 1.0 if value == body["target_value"] else 0.0})

    posts = {"/seed_session": seed, "/increment": increment, "/verify": verify}
    return Starlette(
        routes=[
            Route("/", lambda r: JSONResponse({"status": "ok"}), methods=["GET"]),
            _openapi({path: "post" for path in [*posts, "/aggregate_metrics"]}),
            *(Route(path, handler, methods=["POST"]) for path, handler in posts.items()),
        ]
    )


def nel_app() -> Starlette:
    async def health(request: Request) -> Response:
        return JSONResponse(
            {"status": "ok", "benchmark": "sums", "dataset_size": len(TASKS), "protocol": "gym"}
        )

    async def size(request: Request) -> Response:
        return JSONResponse({"size": len(TASKS)})

    async def seed(request: Request) -> Response:
        body: dict[str, Any] = await request.json()
        task = TASKS[int(body.get("idx", 0))]
        return JSONResponse(
            {"prompt": task["question"], "expected_answer": task["expected_answer"], "metadata": {}}
        )

    async def verify(request: Request) -> Response:
        body = await request.json()
        text = _text_of(body.get("response") or {})
        expected = str(body.get("expected_answer", ""))
        return JSONResponse(
            {
                "reward": 1.0 if expected and expected in text else 0.0,
                "expected_answer": expected,
                "extracted_answer": text,
                "response": body.get("response"),
            }
        )

    return Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/dataset_size", size, methods=["GET"]),
            _openapi(
                {
                    "/health": "get",
                    "/dataset_size": "get",
                    "/seed_session": "post",
                    "/verify": "post",
                }
            ),
            Route("/seed_session", seed, methods=["POST"]),
            Route("/verify", verify, methods=["POST"]),
        ]
    )


def _text_of(response: dict[str, Any]) -> str:
    """The assistant's text in a Responses ``Response`` (what ``nel serve`` scores)."""
    return "".join(
        str(part.get("text", ""))
        for item in response.get("output", [])
        if item.get("type") == "message"
        for part in item.get("content", [])
    )


class Recording:
    """ASGI middleware: appends ``METHOD PATH STATUS`` to ``log`` for every request."""

    def __init__(self, app: ASGIApp, log: Path) -> None:
        self.app = app
        self.log = log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                with self.log.open("a") as log:
                    log.write(f"{scope['method']} {scope['path']} {message['status']}\n")
            await send(message)

        await self.app(scope, receive, sending)


def recorded(log: Path) -> list[tuple[str, str, int]]:
    """The requests written down in ``log``: (method, path, status)."""
    if not log.exists():
        return []
    entries = []
    for line in log.read_text().splitlines():
        method, path, status = line.split(" ")
        entries.append((method, path, int(status)))
    return entries


APPS = {"nemo-gym": nemo_gym_app, "nel": nel_app}


if __name__ == "__main__":
    import uvicorn

    kind, port, log = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    uvicorn.run(Recording(APPS[kind](), log), host="127.0.0.1", port=port, log_level="warning")

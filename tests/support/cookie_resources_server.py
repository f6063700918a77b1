"""A NeMo Gym-style resources server for tests: sessions by cookie only, FastAPI-like answers.

It stands in for a NeMo Gym server (which cannot be installed here) to check that palaestra's
remote-environment client drives a cookie-only server: no session header, tool routes by
name, ``/verify`` answering the request plus ``reward``.
"""

from __future__ import annotations

import re
import secrets

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

CLOSE_REQUEST_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "resources_session_id": {"type": "string"},
        "episode_id": {"$ref": "#/components/schemas/EpisodeId"},
    },
    "required": ["resources_session_id", "episode_id"],
}
"""The newest NeMo Gym's close body, as an OpenAPI schema (its fields, written from its docs)."""


def cookie_resources_app(
    closed: list[str] | None = None, *, typed_close: bool = False
) -> Starlette:
    """``closed``, when given, gets each session a ``/close_session`` ends (the route exists
    then, as on newer NeMo Gym servers, and is listed in ``GET /openapi.json``); it ignores
    palaestra's own headers, as NeMo Gym does. With ``typed_close``, as the newest NeMo Gym's
    servers: the close takes exactly ``{resources_session_id, episode_id: {rollout_id}}``
    (else 422), answers ``{resources_session_id}``, and says so in its OpenAPI document."""
    counters: dict[str, int] = {}

    def session_of(request: Request) -> str:
        return request.cookies.get("session", "")

    async def seed(request: Request) -> Response:
        session = secrets.token_hex(8)
        counters[session] = 0
        response = JSONResponse({})
        response.set_cookie("session", session)
        return response

    async def increment(request: Request) -> Response:
        body = await request.json()
        session = session_of(request)
        if session not in counters:
            return JSONResponse({"detail": "no session"}, status_code=400)
        counters[session] += int(body.get("amount", 1))
        return JSONResponse({"value": counters[session]})

    async def verify(request: Request) -> Response:
        body = await request.json()
        value = counters.get(session_of(request), -1)
        reward = 1.0 if value == body["target_value"] else 0.0
        return JSONResponse({**body, "reward": reward, "final_value": value})

    async def close(request: Request) -> Response:
        answer: dict[str, object] = {}
        if typed_close:
            body = await request.json()
            episode = body.get("episode_id") if isinstance(body, dict) else None
            if (
                set(body) != {"resources_session_id", "episode_id"}
                or not isinstance(body["resources_session_id"], str)
                or not isinstance(episode, dict)
                or set(episode) - {"rollout_id", "attempt"}
                or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", str(episode.get("rollout_id")))
            ):
                return JSONResponse({"detail": "invalid close body"}, status_code=422)
            answer = {"resources_session_id": body["resources_session_id"]}
        session = session_of(request)
        counters.pop(session, None)
        assert closed is not None
        closed.append(session)
        return JSONResponse(answer)

    routes = [
        Route("/", lambda r: JSONResponse({"status": "ok"}), methods=["GET"]),
        Route("/seed_session", seed, methods=["POST"]),
        Route("/increment", increment, methods=["POST"]),
        Route("/verify", verify, methods=["POST"]),
    ]
    if closed is not None:
        routes.append(Route("/close_session", close, methods=["POST"]))
    # As FastAPI does: the routes listed (not GET /), which is how a client learns of them.
    paths: dict[str, dict[str, object]] = {
        route.path: {"post": {}} for route in routes if route.path != "/"
    }
    document: dict[str, object] = {"openapi": "3.1.0", "paths": paths}
    if typed_close and closed is not None:  # FastAPI names a body's model by reference
        ref = {"$ref": "#/components/schemas/CloseRequest"}
        paths["/close_session"]["post"] = {
            "requestBody": {"content": {"application/json": {"schema": ref}}, "required": True}
        }
        document["components"] = {"schemas": {"CloseRequest": CLOSE_REQUEST_SCHEMA}}
    routes.append(Route("/openapi.json", lambda r: JSONResponse(document), methods=["GET"]))
    return Starlette(routes=routes)

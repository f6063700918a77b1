"""The viewer's HTTP app: the page, its assets, and the JSON API the page pages rows from.

Routes (every one behind the token when one is set):

- ``GET /``: the page; ``GET /static/<name>``: its script and style (shipped in the package).
- ``GET /api/runs``: each run's file, summary and identity (``<out>_run.json``).
- ``GET /api/rows?run&offset&limit&sort&order&reward_min&reward_max&kind&task&q``: a page of
  the table (``total`` rows, ``matched`` by the filter, the page's ``rows``).
- ``GET /api/rollout/<n>?run``: one rollout as the page draws it (``rollout.rollout_view``).
- ``GET /api/tokens/<n>?run``: its token view (``tokens.token_view``).
- ``GET /api/pairs?offset&limit&sort&only&task&rollout``: the two runs' rollouts paired by
  (task, rollout), with counts of which run did better.
- ``GET /api/figures?run``: the run's headline figures with confidence intervals
  (``palaestra.evaluate.run_figures``), computed on first request.
- ``GET /api/comparison``: B against A over the paired tasks (``palaestra.evaluate.compare_runs``:
  differences with intervals and paired tests, tasks that flipped).

The token is a bearer header or ``?token=`` in the URL (the page keeps it there so a reload
works, and sends it as a header on its own requests); ``serve.guard.Guard`` checks it.
"""

from __future__ import annotations

import math
import threading
from importlib import resources
from typing import Any
from urllib.parse import quote

import orjson
from starlette.applications import Starlette
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from palaestra.errors import ConfigError, InputError, PalaestraError
from palaestra.http.guard import Guard
from palaestra.viewer.index import SORTS, ChangedFile, Query, RunIndex
from palaestra.viewer.pairs import Pairing
from palaestra.viewer.rollout import preview, rollout_view
from palaestra.viewer.runs import Run
from palaestra.viewer.tokens import LocalVocabulary, token_view

ASSETS = {"viewer.js": "text/javascript", "viewer.css": "text/css"}
MAX_LIMIT = 1000


LOOPBACK_NAMES = ["127.0.0.1", "localhost", "[::1]", "::1"]


def viewer_app(runs: list[Run], *, token: str | None = None, host: str = "127.0.0.1") -> ASGIApp:
    """The viewer of ``runs`` (one, or two to compare) as an ASGI app behind the token.

    Served on a loopback ``host``, it answers only requests addressed to a loopback name: a
    web page elsewhere cannot read the rollouts by pointing a DNS name of its own at
    127.0.0.1 (DNS rebinding), token or not.
    """
    api = _Api(runs, token)
    app = Starlette(
        routes=[
            Route("/", api.page),
            Route("/static/{name}", api.asset),
            Route("/api/runs", api.runs),
            Route("/api/rows", api.rows),
            Route("/api/rollout/{n:int}", api.rollout),
            Route("/api/tokens/{n:int}", api.tokens),
            Route("/api/pairs", api.pairs),
            Route("/api/figures", api.figures),
            Route("/api/comparison", api.comparison),
        ]
    )
    guarded = TokenInUrl(Guard(app, token=token))
    if host in LOOPBACK_NAMES:
        return TrustedHostMiddleware(guarded, allowed_hosts=LOOPBACK_NAMES, www_redirect=False)
    return guarded


class TokenInUrl:
    """``?token=`` in the URL as if it were the bearer header (a page, its script and style
    cannot send headers); the guard then checks it like any other."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and b"token=" in scope.get("query_string", b""):
            from urllib.parse import parse_qs

            # Latin-1 both ways: the token's bytes reach the guard as sent, whatever they are.
            query = scope["query_string"].decode("latin-1")
            given = parse_qs(query, encoding="latin-1").get("token")
            headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"authorization"]
            if given:
                headers.append((b"authorization", f"Bearer {given[0]}".encode("latin-1")))
            scope = {**scope, "headers": headers}
        await self.app(scope, receive, send)


def _json(body: Any, status: int = 200) -> Response:
    return Response(
        orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY),
        status_code=status,
        media_type="application/json",
    )


def _error(status: int, message: str) -> Response:
    return _json({"error": message}, status)


class BadQuery(PalaestraError, ValueError):
    """A query parameter the API cannot read (a 400 naming it)."""


class _Api:
    def __init__(self, runs: list[Run], token: str | None) -> None:
        self.runs_ = runs
        self.token = token
        self.vocabulary = LocalVocabulary()
        self._pairs: tuple[Any, Pairing] | None = None
        self._comparison: tuple[Any, dict[str, Any]] | None = None
        self._lock = threading.Lock()
        self._pairs_lock = threading.Lock()
        self._assets = {
            name: (resources.files(__package__) / "static" / name).read_bytes()
            for name in [*ASSETS, "index.html"]
        }

    # --- the page -----------------------------------------------------------------------------

    async def page(self, request: Request) -> Response:
        query = f"?token={quote(self.token, safe='')}" if self.token else ""
        html = self._assets["index.html"].replace(b"{{query}}", query.encode())
        return Response(html, media_type="text/html; charset=utf-8")

    async def asset(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS:
            return _error(404, f"no asset {name}")
        return Response(self._assets[name], media_type=ASSETS[name])

    # --- the API ------------------------------------------------------------------------------

    def _run(self, request: Request) -> Run:
        number = _int_param(request, "run", 0)
        if not 0 <= number < len(self.runs_):
            raise BadQuery(f"run must be 0..{len(self.runs_) - 1}")
        return self.runs_[number]

    def runs(self, request: Request) -> Response:
        for run in self.runs_:  # a collection still writing: index what it appended
            run.index.refresh()
        return _json({"runs": [run.describe() for run in self.runs_]})

    def rows(self, request: Request) -> Response:
        try:
            run = self._run(request)
            query = _query(request)
        except BadQuery as error:
            return _error(400, str(error))
        index = run.index
        index.refresh()
        matched, page = index.select(query)
        rows = []
        for n in page:
            entry = index.entry(n)
            try:
                entry["preview"] = preview(index.read(n))
            except ChangedFile as error:
                return _error(409, str(error))
            rows.append(entry)
        return _json(
            {"total": len(index), "matched": matched, "offset": query.offset, "rows": rows}
        )

    def _row(self, request: Request) -> tuple[RunIndex, int, dict[str, Any]] | Response:
        try:
            run = self._run(request)
        except BadQuery as error:
            return _error(400, str(error))
        n = request.path_params["n"]
        try:
            return run.index, n, run.index.read(n)
        except IndexError:
            return _error(404, f"no row {n} (the run has {len(run.index)})")
        except ChangedFile as error:
            return _error(409, str(error))

    def rollout(self, request: Request) -> Response:
        found = self._row(request)
        if isinstance(found, Response):
            return found
        index, n, row = found
        if request.query_params.get("raw"):
            return _json({"n": n, "row": row})
        return _json({"n": n, "rows": len(index), **index.where(n), **rollout_view(row)})

    def tokens(self, request: Request) -> Response:
        found = self._row(request)
        if isinstance(found, Response):
            return found
        _, n, row = found
        return _json({"n": n, **token_view(row, self.vocabulary)})

    def pairs(self, request: Request) -> Response:
        if len(self.runs_) < 2:
            return _error(404, "pairs need two runs: palaestra view A.jsonl B.jsonl")
        try:
            offset = _int_param(request, "offset", 0)
            limit = min(_int_param(request, "limit", 100), MAX_LIMIT)
            task_wanted = _optional_int(request, "task")
            rollout_wanted = _optional_int(request, "rollout")
        except BadQuery as error:
            return _error(400, str(error))
        pairing = self._pairing()
        matched, lines = pairing.select(
            only=request.query_params.get("only", ""),
            sort=request.query_params.get("sort", "task"),
            task=task_wanted,
            rollout=rollout_wanted,
            offset=offset,
            limit=limit,
        )
        return _json(
            {
                "total": len(pairing),
                "stats": pairing.stats(),
                "matched": matched,
                "offset": offset,
                "pairs": lines,
            }
        )

    def figures(self, request: Request) -> Response:
        try:
            run = self._run(request)
            figures = run.figures()
        except BadQuery as error:
            return _error(400, str(error))
        except (InputError, ConfigError) as error:
            return _json({"error": f"no intervals: {error}", "figures": []})
        body = figures.to_json()
        return _json({"reading": body["reading"], "figures": body["figures"]})

    def comparison(self, request: Request) -> Response:
        if len(self.runs_) < 2:
            return _error(404, "a comparison needs two runs: palaestra view A.jsonl B.jsonl")
        with self._lock:
            version = [run.version() for run in self.runs_]
            if self._comparison is None or self._comparison[0] != version:
                from palaestra.evaluate import compare_runs

                try:
                    a, b = (run.figures().run for run in self.runs_)
                    body = compare_runs(a, b).to_json()
                    del body["a"], body["b"]  # the figures of each run: /api/figures
                except (InputError, ConfigError) as error:
                    body = {"error": f"no comparison: {error}", "differences": []}
                self._comparison = (version, body)
            return _json(self._comparison[1])

    def _pairing(self) -> Pairing:
        with self._pairs_lock:  # not the comparison's lock: that one is held for seconds
            version = [run.version() for run in self.runs_]
            if self._pairs is None or self._pairs[0] != version:
                self._pairs = (version, Pairing(self.runs_[0].index, self.runs_[1].index))
            return self._pairs[1]


def _int_param(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadQuery(f"{name} must be an integer, not {raw!r}") from None
    if value < 0:
        raise BadQuery(f"{name} must be 0 or more")
    return value


def _optional_int(request: Request, name: str) -> int | None:
    raw = request.query_params.get(name)
    return None if raw is None or raw == "" else _int_param(request, name, 0)


def _float_param(request: Request, name: str) -> float | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        raise BadQuery(f"{name} must be a number, not {raw!r}") from None
    if not math.isfinite(value):
        raise BadQuery(f"{name} must be a finite number")
    return value


def _query(request: Request) -> Query:
    params = request.query_params
    sort = params.get("sort") or "row"
    if sort not in SORTS:
        raise BadQuery(f"sort must be one of {', '.join(SORTS)}, not {sort!r}")
    order = params.get("order") or "asc"
    if order not in ("asc", "desc"):
        raise BadQuery(f"order must be asc or desc, not {order!r}")
    return Query(
        reward_min=_float_param(request, "reward_min"),
        reward_max=_float_param(request, "reward_max"),
        kind=params.get("kind") or None,
        task=_optional_int(request, "task"),
        text=params.get("q") or None,
        sort=sort,
        descending=order == "desc",
        offset=_int_param(request, "offset", 0),
        limit=min(_int_param(request, "limit", 100), MAX_LIMIT),
    )

"""The head server of a stack: where its servers are, for palaestra and for NeMo Gym's clients.

``GET /servers`` is palaestra's own listing (``palaestra status``). NeMo Gym's collector, its
run helper (which NeMo RL and the veRL recipe call) and NeMo Evaluator's ``GymSolver`` find a
stack through two more routes, read from nemo-gym 0.4.0's ``server_utils`` and
``server_status``:

- ``GET /global_config_dict_yaml``: the stack as NeMo Gym's global config, YAML text sent as a
  JSON string (``ServerClient.load_from_global_config`` does ``json.loads`` then
  ``OmegaConf.create``). Each server is ``{name: {server_type: {impl: {host, port}}}}``; the
  collector POSTs a row to ``/run`` of the entry named by the row's ``agent_ref.name``, reading
  only ``host`` and ``port`` three levels down (``get_first_server_config_dict``). So a stack's
  agent named ``weather_agent`` is what rows name in ``agent_ref.name``.
- ``GET /server_instances``: one entry per server as ``ng_status`` reads them
  (``process_name``, ``server_type``, ``name``, ``url``, ``host``, ``port``, ``pid``,
  ``start_time``; ``name`` is the implementation key, ``process_name`` the stack's name).

The routes stay behind the stack's token guard like everything else (NeMo Gym 0.4.0 sends no
credentials, so its clients reach a stack that runs without a token).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import urlsplit

import yaml
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from palaestra.http.json import JSONResponse
from palaestra.observe.metrics_http import metrics_route, stack_metrics
from palaestra.types import JsonDict

SERVER_TYPES = {
    "env": "resources_servers",
    "model": "responses_api_models",
    "agent": "responses_api_agents",
}
"""palaestra's server kinds as NeMo Gym's server types (the second level of its config)."""


def implementation(kind: str) -> str:
    """The third-level key NeMo Gym names a server's implementation by: ``palaestra_<kind>``."""
    return f"palaestra_{kind}"


def head_app(servers: Callable[[], list[JsonDict]], *, stack: str) -> Starlette:
    """The head of a stack whose servers ``servers()`` lists (``Supervisor.snapshot``)."""
    started = time.time()  # the stack is ready when its head is made: NeMo Gym's uptime base

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "stack": stack})

    async def listing(request: Request) -> Response:
        return JSONResponse({"stack": stack, "servers": servers()})

    async def global_config_yaml(request: Request) -> Response:
        head_host, head_port = request.scope.get("server") or ("127.0.0.1", None)
        config = global_config(servers(), head={"host": head_host, "port": head_port})
        return JSONResponse(yaml.safe_dump(config, sort_keys=False))

    async def server_instances(request: Request) -> Response:
        return JSONResponse(instances(servers(), start_time=started))

    return Starlette(
        routes=[
            Route("/", health, methods=["GET"]),
            Route("/servers", listing, methods=["GET"]),
            Route("/global_config_dict_yaml", global_config_yaml, methods=["GET"]),
            Route("/server_instances", server_instances, methods=["GET"]),
            metrics_route(stack_metrics(servers)),
        ]
    )


def _address(server: JsonDict) -> tuple[str | None, int | None]:
    url = server.get("url")
    if not isinstance(url, str):
        return None, None
    parts = urlsplit(url)
    return parts.hostname, parts.port


def global_config(servers: list[JsonDict], *, head: JsonDict) -> JsonDict:
    """NeMo Gym's global config dict for ``servers`` (those with an address) and the head."""
    config: JsonDict = {"head_server": head}
    for server in servers:
        host, port = _address(server)
        kind = str(server["kind"])
        if host is None or kind not in SERVER_TYPES:
            continue  # never announced an address: no client could reach it
        entry: JsonDict = {"host": host, "port": port, "url": server["url"]}
        config[str(server["name"])] = {SERVER_TYPES[kind]: {implementation(kind): entry}}
    return config


def instances(servers: list[JsonDict], *, start_time: float) -> list[JsonDict]:
    """``GET /server_instances``: NeMo Gym's ``ServerInstanceDisplayConfig`` for each server."""
    listed = []
    for server in servers:
        host, port = _address(server)
        kind = str(server["kind"])
        listed.append(
            {
                "process_name": server["name"],
                "config_path": server["name"],
                "server_type": SERVER_TYPES.get(kind, kind),
                "name": implementation(kind),
                "host": host,
                "port": port,
                "url": server.get("url"),
                "pid": server.get("pid"),
                "start_time": start_time,
            }
        )
    return listed

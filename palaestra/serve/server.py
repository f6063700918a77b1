"""Serving one ``ServeSpec``: an environment, a model or an agent, behind the token guard.

``palaestra serve env|model|agent`` parse their flags into a ``ServeSpec`` and call ``serve``;
a stack's supervisor writes each server's spec to a file and starts ``palaestra serve spec
FILE``. The parts come from ``palaestra.collection.assembly``, as a collection run's do.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from palaestra.collection.assembly import (
    build_agent,
    build_model,
    closed_book,
    find,
    open_environment,
    opened_user_model,
    user_model_for,
)
from palaestra.errors import ConfigError, ModelError
from palaestra.spec import ServeSpec

if TYPE_CHECKING:
    from palaestra.collection.assembly import FoundEnvironment
    from palaestra.environment.base import Environment
    from palaestra.models.base import Model


def serve(spec: ServeSpec) -> None:
    """Serve ``spec`` until interrupted, on the fastest event loop available.

    A server process makes the collector's process-wide choices (``collection.runtime``):
    rare young GCs (thousands of live sessions and connections are scanned again and again
    by each, and the hot path makes no cycles) and the open-files limit lifted to the hard
    limit (each concurrent session's client holds a connection).
    """
    from palaestra._util.loop import run_on_fast_loop
    from palaestra.collection.runtime import collector_gc, raise_open_files_limit

    raise_open_files_limit()
    with collector_gc():
        run_on_fast_loop(serve_async(spec))


async def serve_async(spec: ServeSpec) -> None:
    """Build what ``spec`` serves, announce its address once it listens, serve until stopped.

    A mistake in the spec (unknown environment, argument, agent or model) is a one-line
    ``ConfigError`` before anything listens; so is a busy port.
    """
    if spec.kind == "env":
        await _serve_env(spec)
    elif spec.kind == "model":
        await _serve_model(spec)
    elif spec.kind == "openenv":
        await _serve_openenv(spec)
    elif spec.kind == "ors":
        await _serve_ors(spec)
    else:
        await _serve_agent(spec)


async def _serve_env(spec: ServeSpec) -> None:
    from palaestra.collection.tasks import load_dataset
    from palaestra.serve.env_app import (
        DEFAULT_MAX_SESSIONS,
        DEFAULT_MAX_TASK_BYTES,
        DEFAULT_MAX_TOTAL_TASK_BYTES,
        environment_app,
    )

    if spec.env.cmd is not None:  # a stack's {kind: env, cmd: ...}: a command's server
        from palaestra.remote.managed import serve_command

        return await serve_command(spec)
    if spec.env.url is not None:
        raise ConfigError("an env server serves an environment of this process, not a url")
    found = find(spec.env)
    if found is None:
        raise ConfigError("name the environment to serve (a name, ./file.py or module:Class)")
    user_model_for(found, spec.user_model)
    dataset = load_dataset(spec.tasks or found.example_tasks)
    async with opened_user_model(spec.user_model) as user_model:  # the server's own
        app = environment_app(
            found.build(),
            dataset=dataset,
            max_sessions=_cap(spec.max_sessions, DEFAULT_MAX_SESSIONS),
            max_task_bytes=_cap(spec.max_task_bytes, DEFAULT_MAX_TASK_BYTES),
            max_total_task_bytes=_cap(spec.max_total_task_bytes, DEFAULT_MAX_TOTAL_TASK_BYTES),
            user_model=user_model,
        )
        await serve_guarded(app, spec, label=f"environment {found.name}")


def _built(spec: ServeSpec) -> tuple[FoundEnvironment, Environment]:
    """The environment an OpenEnv or ORS server serves (one of this process), built; a
    one-line ``ConfigError`` when the spec names none or one served elsewhere."""
    found = find(spec.env)
    if found is None or spec.env.url is not None or spec.env.cmd is not None:
        raise ConfigError("name the environment to serve (a name, ./file.py or module:Class)")
    user_model_for(found, spec.user_model)
    return found, found.build()


async def _serve_openenv(spec: ServeSpec) -> None:
    from palaestra.collection.tasks import load_dataset
    from palaestra.environment.running.client import LocalEnvironmentClient
    from palaestra.serve.openenv_app import openenv_app, task_source

    found, environment = _built(spec)
    async with opened_user_model(spec.user_model) as user_model:  # the server's own
        app = openenv_app(
            LocalEnvironmentClient(environment, user_model=user_model),
            task_source(load_dataset(spec.tasks or found.example_tasks), environment),
            name=found.name,
            description=environment.description,
            token=spec.token,
        )
        label = f"environment {found.name} (OpenEnv)"
        await serve_guarded(app, spec, label=label, ws="auto")


async def _serve_ors(spec: ServeSpec) -> None:
    from palaestra.environment.running.client import LocalEnvironmentClient
    from palaestra.environment.step import StepEnvironment
    from palaestra.serve.ors_app import ApiKeyAsBearer, ors_app, served_splits

    found, environment = _built(spec)
    splits = served_splits(spec.splits, spec.tasks or found.example_tasks, environment)
    async with opened_user_model(spec.user_model) as user_model:  # the server's own
        app = ors_app(
            LocalEnvironmentClient(environment, user_model=user_model),
            splits,
            name=found.name,
            turn_based=isinstance(environment, StepEnvironment),
            session_ttl=environment.session_ttl,
        )
        label = f"environment {found.name} (ORS)"
        await serve_guarded(app, spec, label=label, outer=ApiKeyAsBearer)


async def _serve_model(spec: ServeSpec) -> None:
    from palaestra.serve.model_app import model_app

    model = build_model(spec.model)
    try:
        await model.check()  # load the weights / reach the backend before saying "serving"
        model_id = spec.model_id or await _listed_id(model)
        app = model_app(model, model_id=model_id)
        label = f"{spec.model.backend} model {model_id}"
        await serve_guarded(app, spec, label=label, path="/v1")
    finally:
        await model.aclose()


async def _listed_id(model: Model) -> str:
    """The id ``/v1/models`` lists when none is given: for a backend reached over HTTP with
    no model named, the backend's own (a client sends the listed id back as ``model``, and the
    request goes upstream with it: a URL there would be refused); else the model's name."""
    from palaestra.models.openai.endpoint import RemoteModel
    from palaestra.models.pool import ModelPool

    # A pool's endpoints share its config: unnamed together, and the first lists for all.
    remote = model.endpoints[0].model if isinstance(model, ModelPool) else model
    if isinstance(remote, RemoteModel) and remote.config.model is None:
        with contextlib.suppress(ModelError):  # it lists none: keep the name, as before
            return await remote.endpoint.model_name()
    return model.name


async def _serve_agent(spec: ServeSpec) -> None:
    from palaestra.models.closed_book import ClosedBookModel
    from palaestra.serve.agent_app import agent_app

    found = find(spec.env)
    if spec.user_model is not None and spec.env.url is not None:
        raise ConfigError(
            f"the environment is served at {spec.env.url}: its user model is its server's"
        )
    user_model_for(found, spec.user_model)
    built = build_model(spec.model)
    closed = closed_book(spec.hosted_tools, found)
    model: Model = ClosedBookModel(built) if closed else built
    async with contextlib.AsyncExitStack() as stack:
        app = None
        try:
            user_model = await stack.enter_async_context(
                opened_user_model(spec.user_model, (spec.model, model), closed_book=closed)
            )
            env, default = await open_environment(spec.env, found, user_model=user_model)
            try:
                agent = build_agent(spec.agent, default)
                await model.check()
            except BaseException:
                await env.aclose()
                raise
            app = agent_app(agent, env, model, closed_book=closed)  # its lifespan closes both
        finally:
            if app is None:
                await model.aclose()
        await serve_guarded(app, spec, label=f"agent {agent.name} on {env.name}")


def _cap(value: int | None, default: int) -> int | None:
    """A cap: unset is the server's default, 0 lifts the cap."""
    if value is None:
        return default
    return value or None


async def serve_guarded(
    app: Any,
    spec: ServeSpec,
    *,
    label: str,
    path: str = "",
    ws: str = "none",
    outer: Callable[[Any], Any] | None = None,
) -> None:
    """Serve behind the token/body-size guard; announce the address for humans and supervisors.

    ``ws``: uvicorn's WebSocket protocol, ``"auto"`` for an app with WebSocket routes;
    ``outer``: a middleware around the guard (one that reads a protocol's own key header)."""
    from palaestra.http.announce import ready_line, serve_announced
    from palaestra.http.guard import Guard
    from palaestra.transport import unix_url

    unix = {"unix": unix_url(str(spec.unix_socket))} if spec.unix_socket else {}
    also = f" and {unix['unix']}{path}" if unix else ""

    def on_ready(url: str) -> None:
        print(f"serving {label} on {url}{path}{also}", file=sys.stderr, flush=True)
        print(ready_line(url, **unix), flush=True)

    guarded = Guard(app, token=spec.token)
    await serve_announced(
        guarded if outer is None else outer(guarded),
        host=spec.host,
        port=spec.port,
        on_ready=on_ready,
        unix_socket=spec.unix_socket,
        ws=ws,
    )

"""The run specification: one typed description of a run that every way in builds.

``palaestra collect`` turns its flags into a ``RunSpec``, a stack file's servers are read into
the same parts, and Python callers pass keyword arguments that become one. The spec (without
secrets) is saved beside the output, so ``--resume`` can tell whether it continues the same run.

::

    RunSpec
    ├── env: EnvSpec            which environment (name, file, import path or served URL) + args
    ├── model: ModelConfig      which model backend and endpoint, key source, retries, timeouts,
    │                           sampling overrides
    ├── user_model: ModelConfig | None   the simulated user's model (``--user-model``), if any
    ├── agent: AgentSpec        which harness (or a served agent's URL) + its options
    └── collection: CollectOptions   input, output, repeats, concurrency, resume, ...

``ServeSpec`` is one server of the same parts (``palaestra serve``, a stack's servers).
``palaestra.collection.assembly`` turns either into running objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

import pydantic

from palaestra._util.arguments import jsonable
from palaestra.errors import ConfigError
from palaestra.types import JsonDict

M = TypeVar("M", bound=pydantic.BaseModel)

_FROZEN = pydantic.ConfigDict(extra="forbid", frozen=True)

SAMPLING_FIELDS = ("temperature", "top_p", "max_output_tokens")
"""Responses create params a run may override for every task."""


class EnvSpec(pydantic.BaseModel):
    """The environment: built in this process from ``name`` + ``args``, or reached at ``url``."""

    model_config = _FROZEN

    name: str | None = None
    """A registered name (``weather``), a file (``./my_env.py[:Class]``) or ``module:Class``."""
    args: dict[str, Any] = pydantic.Field(default_factory=dict)
    """Keyword arguments of the environment's constructor."""
    url: str | None = None
    """A served environment (NeMo Gym resources-server protocol) instead of ``name``."""
    cmd: str | None = None
    """A command that starts the environment server for the run and is stopped after it
    (``palaestra.remote.managed``): it listens at ``url`` if given, else on the free port the
    collector puts in ``{port}`` and ``$PORT``."""
    cmd_timeout: float | None = pydantic.Field(default=None, gt=0, exclude=True)
    """Seconds to wait for ``cmd``'s server to become healthy (None: the default of
    ``palaestra.remote.managed``); a command that exits ends the wait at once. Not saved: how
    long this invocation waits is no part of the run."""
    token: str | None = pydantic.Field(default=None, exclude=True, repr=False)
    """Bearer token of the served environment; never saved."""
    environment: Any = pydantic.Field(default=None, exclude=True, repr=False)
    """An ``Environment`` instance or class given from Python (then ``name`` is its name);
    not saved: a saved spec names it by ``name``."""

    @pydantic.field_serializer("args")
    def _saved_args(self, args: dict[str, Any]) -> dict[str, Any]:
        return cast(dict[str, Any], jsonable(args))


class ModelConfig(pydantic.BaseModel):
    """One model endpoint, as every model backend receives it.

    ``backend`` picks the implementation (``openai`` for any OpenAI-compatible server,
    ``local`` for the embedded model, or a plug-in registered under ``palaestra.models``);
    ``palaestra.models.build_model`` builds it, ``palaestra.models.model_config`` reads one
    from what a user wrote. A backend uses the fields that mean something to it and puts its
    own settings in ``options``.
    """

    model_config = _FROZEN

    backend: str = "openai"
    url: str | None = None
    """Base URL of an OpenAI-compatible server (``http://host:8000/v1``)."""
    urls: list[str] = pydantic.Field(default_factory=list)
    """Several base URLs of the same model (replicas): a load-aware pool
    (``palaestra.models.pool``) that keeps each rollout on one endpoint. Two or more make a
    pool, and ``url`` is then None; one is the same as ``url``. Given both, ``url`` must be
    one of ``urls``. Duplicates are dropped, order kept."""
    api: Literal["auto", "responses", "chat"] = "auto"
    """``responses``, ``chat`` or ``auto`` (detect once per run) for the ``openai`` backend."""
    model: str | None = None
    """The ``model`` field sent with every request (default: the server's first model)."""
    api_key: str | None = pydantic.Field(default=None, exclude=True, repr=False)
    """The key itself; never saved, never logged."""
    api_key_env: str | None = None
    """Or the name of the environment variable that holds it, read when the model is built
    (saved: it is not the secret)."""
    max_retries: int = pydantic.Field(default=3, ge=0)
    """Retries of a transient failure (429, 5xx, dropped connection, read timeout)."""
    retry_delay: float = pydantic.Field(default=0.5, ge=0)
    """Seconds before the first retry; doubled for each next one (with jitter)."""
    max_retry_delay: float = pydantic.Field(default=8.0, ge=0)
    """The longest wait between retries, also the cap on a server's ``Retry-After``."""
    request_timeout: float = pydantic.Field(default=600.0, gt=0)
    """Seconds to wait for an answer once the request is sent (a whole generation); a model
    call waits this plus ``pause_deadline``, as a paused engine may hold a request."""
    pause_deadline: float = pydantic.Field(default=600.0, ge=0)
    """Seconds one call may wait on an endpoint paused for a weight update (429/503 with
    ``Retry-After``, ``X-Agl-Paused: true``, a held request) without spending its retries;
    past it the call fails naming the pause. 0: pauses are retried like other failures."""
    connect_timeout: float = pydantic.Field(default=10.0, gt=0)
    sampling: dict[str, Any] = pydantic.Field(default_factory=dict)
    """Overrides of ``temperature``, ``top_p``, ``max_output_tokens`` for every request (the
    collector writes them into each task's params, so rows record them)."""
    options: dict[str, Any] = pydantic.Field(default_factory=dict)
    """Backend-specific settings (e.g. the local model's ``n_ctx``); a backend rejects names it
    does not know."""

    @pydantic.model_validator(mode="before")
    @classmethod
    def _one_url_or_a_pool(cls, fields: Any) -> Any:
        """``urls`` with one entry is ``url``; with several, ``url`` is None (a pool). A URL
        given twice (``U`` and ``U/`` too) is one endpoint, spelt as first given."""
        urls = fields.get("urls") if isinstance(fields, dict) else None
        if not isinstance(urls, list) or not urls or not all(isinstance(u, str) for u in urls):
            return fields  # nothing to normalise, or wrong: the field's own check says so
        spelt: dict[str, str] = {}
        for given in urls:
            spelt.setdefault(given.rstrip("/"), given)
        unique = list(spelt.values())
        if fields.get("url") not in (None, *unique):
            return fields
        if len(unique) == 1:
            return {**fields, "url": unique[0], "urls": []}
        return {**fields, "url": None, "urls": unique}

    @pydantic.field_validator("urls")
    @classmethod
    def _url_is_one_of_urls(cls, urls: list[str], info: pydantic.ValidationInfo) -> list[str]:
        url = info.data.get("url")
        if url is not None and urls:
            raise ValueError(f"url {url!r} is not one of urls (give one or the other)")
        return urls


class AgentSpec(pydantic.BaseModel):
    """The harness: ``name`` (default: the environment's own) and its options, or a served one."""

    model_config = _FROZEN

    name: str | None = None
    options: dict[str, Any] = pydantic.Field(default_factory=dict)
    """Keyword arguments of the agent's constructor (``max_steps``, ``max_calls_per_turn``)."""
    url: str | None = None
    """A served agent (``/run``) instead of one in this process."""
    token: str | None = pydantic.Field(default=None, exclude=True, repr=False)

    @pydantic.field_serializer("options")
    def _saved_options(self, options: dict[str, Any]) -> dict[str, Any]:
        return cast(dict[str, Any], jsonable(options))


class CollectOptions(pydantic.BaseModel):
    """What to run and where to write it."""

    model_config = _FROZEN

    input: Path | None = None
    """Tasks JSONL (default: the environment's example tasks)."""
    split: str | None = None
    """Run the environment's named task split instead of its example tasks (``smoke``: a few
    easy tasks of the suite; ``palaestra.environment.finding.registry.task_split``)."""
    output: Path | None = None
    """Rollouts JSONL (default: ``runs/<env>.jsonl``)."""
    repeats: int = pydantic.Field(default=1, ge=1)
    concurrency: int | None = pydantic.Field(default=None, ge=1)
    """Rollouts in flight (default: 16, or 1 for the embedded model)."""
    limit: int | None = pydantic.Field(default=None, ge=1)
    num_tasks: int | None = pydantic.Field(default=None, ge=1)
    """Generate this many tasks with the environment's generator instead of reading ``input``."""
    seed: int = 0
    resume: bool = False
    overwrite: bool = False
    failures_as_zero: bool = False
    """How the figures shown at the end of a run read failed rollouts: as reward 0, instead of
    left out (``palaestra.evaluate.run_figures``). The rows and the aggregate file are the same
    either way; not part of the run's identity."""
    metrics_port: int | None = pydantic.Field(default=None, ge=0, le=65535)
    """Serve the run's Prometheus metrics on ``http://127.0.0.1:PORT/metrics`` while it runs
    (``palaestra.observe``; 0: a free port, logged). Not part of the run's identity."""
    executor: Literal["local", "ray"] = "local"
    """Where rollouts run: ``local`` (this machine) or ``ray`` (actors on a Ray cluster;
    ``palaestra.distributed``). Not part of the run's identity: a resume may change it."""
    ray_address: str | None = None
    """The Ray cluster to join (``ray://host:10001``, ``auto``); None starts a local one."""
    workers: int | None = pydantic.Field(default=None, ge=1)
    """Worker processes (``local``: default 1, which runs in this process) or Ray actors
    (``ray``: default the cluster's CPUs) that share the rollouts in flight."""
    report: bool = False
    """At the end, write the run's report beside the output (``<out>_report.md`` and
    ``<out>_report.html``, ``palaestra.evaluate.write_report``). Not part of the run's
    identity."""
    hosted_tools: bool = False
    """Send provider-hosted tools (web search, file search, code interpreter...) that a task
    names even when its environment declares no network (``Environment.network``). Default:
    such runs are closed-book, their requests without them (``palaestra.models.closed_book``).
    Part of the run's identity: a resume cannot mix closed-book and open rows."""


class RunSpec(pydantic.BaseModel):
    """A whole run: environment, model, agent and collection options."""

    model_config = _FROZEN

    env: EnvSpec = pydantic.Field(default_factory=EnvSpec)
    model: ModelConfig = pydantic.Field(default_factory=lambda: ModelConfig(backend="local"))
    agent: AgentSpec = pydantic.Field(default_factory=AgentSpec)
    collection: CollectOptions = pydantic.Field(default_factory=CollectOptions)
    user_model: ModelConfig | None = None
    """The model that plays the simulated user of an environment that has one
    (``--user-model``), lent to the environment through its context; None: no user model.
    The same config as ``model`` (``local`` and ``local``) is one model, loaded once."""

    def to_json(self) -> JsonDict:
        """The spec as saved beside the output: JSON types only, no secrets."""
        return self.model_dump(mode="json")


class ServeSpec(pydantic.BaseModel):
    """One server (``palaestra serve env|model|agent|openenv``, or a server of a stack): what
    it serves, built from the same parts as a run, and where it listens.

    An ``env`` server serves ``env``; a ``model`` server serves ``model``; an ``agent`` server
    runs ``agent`` against ``env`` (in process, or at ``env.url``) and ``model``; an
    ``openenv`` server serves ``env`` in OpenEnv's protocol (its resets pick from ``tasks``);
    an ``ors`` server serves ``env`` in the Open Reward Standard (its splits: ``splits``, and
    ``tasks`` as the split ``test``).
    """

    model_config = _FROZEN

    kind: Literal["env", "model", "agent", "openenv", "ors"]
    env: EnvSpec = pydantic.Field(default_factory=EnvSpec)
    model: ModelConfig = pydantic.Field(default_factory=lambda: ModelConfig(backend="local"))
    agent: AgentSpec = pydantic.Field(default_factory=AgentSpec)
    user_model: ModelConfig | None = None
    """An env server's (or an agent server's in-process environment's) simulated-user model
    (``--user-model``); None: none."""
    host: str = "127.0.0.1"
    port: int = pydantic.Field(default=0, ge=0, le=65535)
    """0 picks a free port (printed when the server is ready)."""
    token: str | None = pydantic.Field(default=None, exclude=True, repr=False)
    """The bearer token every request must carry; never saved."""
    unix_socket: Path | None = None
    """Also listen on this Unix socket: a stack's servers reach each other there (12% less CPU
    per served rollout than loopback TCP); the ready line names it as ``unix``."""
    tasks: Path | None = None
    """An env server's tasks, addressed by index by NeMo Evaluator (default: the examples)."""
    splits: dict[str, Path] = pydantic.Field(default_factory=dict)
    """An ORS server's splits by name: each one's task file."""
    max_sessions: int | None = pydantic.Field(default=None, ge=0)
    """An env server's cap on live sessions (None: the server's default; 0 lifts it)."""
    max_task_bytes: int | None = pydantic.Field(default=None, ge=0)
    """An env server's cap on a seeded task's size (None: the default; 0 lifts it)."""
    max_total_task_bytes: int | None = pydantic.Field(default=None, ge=0)
    """An env server's cap on the bytes of its live sessions' tasks together (None: the
    default; 0 lifts it)."""
    model_id: str | None = None
    """The id a model server lists on ``/v1/models`` (default: the model's name)."""
    hosted_tools: bool = False
    """An agent server sends provider-hosted tools a task names even when its environment
    declares no network (``CollectOptions.hosted_tools``); default: closed-book."""

    def to_json(self) -> JsonDict:
        """The spec as a supervisor hands it to a server process: no secrets."""
        return self.model_dump(mode="json")


def validated(model: type[M], fields: Mapping[str, Any], where: str) -> M:
    """``model`` built from ``fields``; the first thing wrong as one ``ConfigError`` line,
    ``<where>: field '<dotted.path>': <what is wrong>``."""
    try:
        return model.model_validate(dict(fields))
    except pydantic.ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise ConfigError(f"{where}: field '{field}': {first['msg']}") from None

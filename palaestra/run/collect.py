"""``palaestra.collect``: collect verified rollouts from Python, as ``palaestra collect`` does.

::

    import palaestra

    summary = palaestra.collect(env="math", model="http://localhost:8000/v1",
                                input="tasks.jsonl", output="runs/math.jsonl",
                                repeats=4, concurrency=64, resume=True)

The command is a thin shell over this: it parses its flags into the same ``RunSpec`` and calls
``collect_async``. Everything the command guarantees holds here too: the four output files, the
lock on the output, the run identity checked on resume (the spec is saved in
``<out>_run.json``), the stop rules, the summary.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from palaestra.collection.assembly import (
    AGENT_REF_TYPE,
    FoundEnvironment,
    find,
    open_runner,
    user_model_for,
    user_model_here,
    without_credentials,
)
from palaestra.collection.collector import CollectConfig, Progress, RunSummary
from palaestra.collection.collector import collect as run_collection
from palaestra.collection.generated import write_generated_tasks
from palaestra.collection.runtime import run_collector
from palaestra.collection.tasks import check_input_file
from palaestra.environment.base import Environment
from palaestra.environment.finding.registry import task_split
from palaestra.environment.running.boundary import raised
from palaestra.errors import CallbackError, ConfigError
from palaestra.run.metrics import MetricsServer, run_metrics
from palaestra.spec import AgentSpec, CollectOptions, EnvSpec, ModelConfig, RunSpec, validated

if TYPE_CHECKING:
    from typing_extensions import Unpack

_log = logging.getLogger("palaestra.collect")

ProgressCallback = Callable[[RunSummary], object]
"""Called with the run's summary when it starts and after every finished rollout."""


class RunFields(TypedDict, total=False):
    """The keyword arguments of ``collect``, ``collect_async`` and ``run_spec``.

    Only ``env`` (or ``env_url``, or ``agent_url``) is needed; everything else has the
    command's default.
    """

    env: str | Environment | type[Environment] | EnvSpec
    """A registered name (``"math"``), ``"./my_env.py[:Class]"``, ``"module:Class"``, an
    ``Environment`` class (built with ``env_args``) or instance, or an ``EnvSpec``."""
    env_args: Mapping[str, Any]
    """Keyword arguments of the environment's constructor."""
    env_url: str
    """A served environment (NeMo Gym resources-server protocol) instead of ``env``."""
    env_cmd: str
    """A command that starts the environment server, stopped after the run (listening at
    ``env_url`` if given, else on the free port put in ``{port}`` / ``$PORT``)."""
    env_cmd_timeout: float
    """Seconds to wait for the ``env_cmd`` server to become healthy (default 120)."""
    model: str | list[str] | ModelConfig
    """``"local"`` (default), an OpenAI-compatible base URL, a name in
    ``palaestra_models.yaml``, a model backend's name, or a ``ModelConfig``; or a list of the
    base URLs of several replicas of one model (a load-aware pool, ``palaestra.models.pool``;
    also ``ModelConfig(urls=[...])``)."""
    api_key: str
    """The model endpoint's key (never saved); or name a variable in ``ModelConfig``."""
    user_model: str | list[str] | ModelConfig | None
    """The model that plays the simulated user of an environment that has one, in the forms
    ``model`` takes (``"local"``, a URL, a name, a ``ModelConfig``); lent to the environment
    through its context. The same as ``model`` (``"local"`` and ``"local"``) is one model.
    Default: none."""
    sampling: Mapping[str, Any]
    """Overrides of ``temperature``, ``top_p``, ``max_output_tokens`` for every task."""
    agent: str | AgentSpec
    """The harness (default: the environment's own), a plug-in's name, or an ``AgentSpec``."""
    agent_options: Mapping[str, Any]
    """The agent's keyword arguments (``max_steps``, ``max_calls_per_turn``, ...)."""
    agent_url: str
    """A served agent: each task is sent to its ``/run``."""
    server_token: str
    """Bearer token of ``env_url`` / ``agent_url`` servers (never saved)."""
    input: str | os.PathLike[str]
    """Tasks JSONL (default: the environment's example tasks)."""
    split: str
    """Run the environment's named task split (``smoke``) instead of its example tasks."""
    output: str | os.PathLike[str]
    """Rollouts JSONL (default: ``runs/<env>.jsonl``); the other files go beside it."""
    repeats: int
    concurrency: int
    """Rollouts in flight (default: 16, or 1 for the embedded model)."""
    limit: int
    num_tasks: int
    """Generate this many tasks with the environment's generator instead of reading ``input``."""
    seed: int
    resume: bool
    """Continue the run recorded beside ``output``: finished rollouts are skipped."""
    overwrite: bool
    """Delete an earlier run's files and start over."""
    failures_as_zero: bool
    """Read failed rollouts as reward 0 in the figures shown at the end (``RunSpec``'s
    ``collection.failures_as_zero``; ``palaestra.evaluate.run_figures``); default: left out."""
    report: bool
    """At the end, write the run's report beside the output: ``<out>_report.md`` and
    ``<out>_report.html`` (``palaestra.evaluate.write_report``)."""
    hosted_tools: bool
    """Send provider-hosted tools (web search, ...) a task names even when its environment
    declares no network (default: closed-book; ``CollectOptions.hosted_tools``)."""
    metrics_port: int
    """Serve the run's Prometheus metrics on ``http://127.0.0.1:PORT/metrics`` while it runs."""
    executor: Literal["local", "ray"]
    """Where rollouts run: ``"local"`` (default) or ``"ray"`` (actors on a Ray cluster)."""
    ray_address: str
    """The Ray cluster to join (default: start a local one)."""
    workers: int
    """Worker processes (``local``; 1, the default, runs in this process) or Ray actors
    (``ray``; default: the cluster's CPUs), sharing the rollouts in flight."""


def run_spec(**fields: Unpack[RunFields]) -> RunSpec:
    """The ``RunSpec`` that ``collect(**fields)`` runs (see ``RunFields``).

    A value out of range or of the wrong kind is a one-line ``ConfigError`` naming the field;
    a keyword that is not a field is a ``TypeError``.
    """
    unknown = sorted(set(fields) - set(RunFields.__annotations__))
    if unknown:
        known = ", ".join(RunFields.__annotations__)
        raise TypeError(f"unknown argument '{unknown[0]}' (known: {known})")
    given: dict[str, Any] = dict(fields)
    options = {key: given[key] for key in CollectOptions.model_fields if given.get(key) is not None}
    return RunSpec(
        env=_env_spec(given),
        model=_model_config(given),
        agent=_agent_spec(given),
        collection=validated(CollectOptions, options, "collect"),
        user_model=_user_model_config(given),
    )


async def collect_async(
    spec: RunSpec | None = None,
    /,
    *,
    progress: Progress | ProgressCallback | None = None,
    **fields: Unpack[RunFields],
) -> RunSummary:
    """Collect the rollouts ``spec`` (or the keyword arguments, see ``RunFields``) describes.

    For code already inside an event loop; ``collect`` is the same without one. Returns the
    ``RunSummary`` (``scored``, ``mean_reward``, ``failures``, ``stopped_reason``, ``files``).
    A mistake (unknown environment, unusable input or output, an output another collector
    holds, a resume of another run, the API key rejected) raises a one-line ``ConfigError``
    before anything runs. ``progress`` is a ``Progress`` or a callable taking the summary.
    """
    if spec is not None and fields:
        raise TypeError("pass a RunSpec or keyword arguments, not both")
    spec = spec if spec is not None else run_spec(**fields)
    user_model_here(spec)  # before anything is reached: a served part has its own
    shown = as_progress(progress)
    # The metrics port first: a busy one is refused before anything starts.
    with run_metrics(spec.collection.metrics_port, lambda text: _note(shown, text)) as metrics:
        if spec.env.cmd is not None:
            return await _managed(spec, shown, metrics)
        return await _run(spec, shown, metrics)


async def _run(spec: RunSpec, progress: Progress, metrics: MetricsServer | None) -> RunSummary:
    """The run of ``spec``; a ``cmd`` environment is already started, at ``spec.env.url``."""
    found = find(spec.env)
    if found is None and spec.env.url is None and spec.agent.url is None:
        raise ConfigError("name an environment: env=NAME, env_url=URL or agent_url=URL")
    user_model_for(found, spec.user_model)  # before it is reached: refused if nothing asks it
    options = spec.collection
    output = options.output or Path("runs") / f"{found.name if found else 'remote'}.jsonl"
    concurrency = options.concurrency or default_concurrency(spec)
    tasks = await _served_input(spec, found, output) or _input_path(options, found, output)
    saved = spec.model_copy(
        update={
            "model": without_credentials(spec.model),
            "user_model": spec.user_model and without_credentials(spec.user_model),
            "collection": options.model_copy(
                update={"input": tasks, "output": output, "concurrency": concurrency}
            ),
        }
    )
    if options.executor == "ray" or (options.workers or 1) > 1:
        from palaestra.distributed import open_executor  # workers: processes or Ray actors

        opened = open_executor(spec, found, threads=concurrency)
    else:
        opened = open_runner(spec, found, threads=concurrency)
    async with opened as parts:
        config = CollectConfig(
            input=tasks,
            output=output,
            repeats=options.repeats,
            concurrency=concurrency,
            limit=options.limit,
            resume=options.resume,
            overwrite=options.overwrite,
            overrides=dict(spec.model.sampling),
            agent_ref={"type": AGENT_REF_TYPE, "name": parts.label},
            run_facts={**parts.facts, "spec": saved.to_json()},
        )
        if metrics is not None:
            metrics.observe(parts.runner, config)
        summary = await run_collection(parts.runner, config, progress)
    if options.report and summary.files is not None and summary.files.output.is_file():
        from palaestra.evaluate.report import write_report  # the report: the run's files read back

        await asyncio.to_thread(
            write_report, summary.files.output, failures_as_zero=options.failures_as_zero
        )
    return summary


def collect(
    spec: RunSpec | None = None,
    /,
    *,
    progress: Progress | ProgressCallback | None = None,
    **fields: Unpack[RunFields],
) -> RunSummary:
    """Collect verified rollouts; the same as ``collect_async`` on an event loop of its own.

    ::

        summary = palaestra.collect(env="weather", model="http://localhost:8000/v1",
                                    output="runs/weather.jsonl", repeats=4, resume=True)

    The loop is uvloop's when installed, with the collector's GC tuning; SIGTERM stops the
    run as Ctrl-C does (finished rollouts are kept, the aggregate written) and raises
    ``palaestra.collection.runtime.Terminated``. Inside a running event loop, await
    ``collect_async`` instead.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError(
            "palaestra.collect() runs its own event loop; inside one, await "
            "palaestra.collect_async(...)"
        )
    if spec is not None and fields:
        raise TypeError("pass a RunSpec or keyword arguments, not both")
    spec = spec if spec is not None else run_spec(**fields)
    return run_collector(collect_async(spec, progress=progress))


def default_concurrency(spec: RunSpec) -> int:
    """16 rollouts in flight, or 1 per worker for the embedded model, as the policy or as the
    user model (it answers one request at a time, and one rollout at a time keeps its prompt
    cache warm; 16 conversations queued on it would wait past their time limits)."""
    user = spec.user_model is not None and spec.user_model.backend == "local"
    local = (spec.model.backend == "local" or user) and spec.agent.url is None
    return (spec.collection.workers or 1) if local else 16


async def _managed(spec: RunSpec, progress: Progress, metrics: MetricsServer | None) -> RunSummary:
    """Start the environment server ``spec.env.cmd``, run against it, and always stop it
    (``palaestra.remote.managed``); its output goes to ``<out>_env_server.log``."""
    from palaestra.remote.managed import READY_TIMEOUT, managed_server

    env = spec.env
    assert env.cmd is not None
    if env.name is not None or env.environment is not None or env.args:
        raise ConfigError("--env-cmd starts a served environment: give it without --env")
    output = Path(spec.collection.output or Path("runs") / "remote.jsonl")
    output.parent.mkdir(parents=True, exist_ok=True)
    log = output.with_name(f"{output.stem}_env_server.log")
    wait = env.cmd_timeout if env.cmd_timeout is not None else READY_TIMEOUT
    async with managed_server(
        env.cmd, url=env.url, log_path=log, ready_timeout=wait, token=env.token
    ) as server:
        served = spec.model_copy(update={"env": env.model_copy(update={"url": server.url})})
        summary = await _run(served, progress, metrics)
        died = await server.gone()
        if died is not None:  # the run could not finish: resumable once the server runs
            summary.stopped_reason = "; ".join(filter(None, (summary.stopped_reason, died)))
        return summary


async def _served_input(spec: RunSpec, found: FoundEnvironment | None, output: Path) -> Path | None:
    """With no ``input``, a served environment's own tasks (NeMo Evaluator's protocol),
    written to ``<out>_tasks.jsonl`` (``palaestra.collection.served_tasks``); else None."""
    options = spec.collection
    if found is not None or spec.env.url is None or spec.agent.url is not None:
        return None
    if options.input is not None or options.num_tasks is not None or options.split is not None:
        return None
    from palaestra.collection.served_tasks import served_tasks

    path = output.with_name(f"{output.stem}_tasks.jsonl")
    return await served_tasks(spec.env.url, path, token=spec.env.token)


def _input_path(options: CollectOptions, found: FoundEnvironment | None, output: Path) -> Path:
    """The tasks to run: ``input``, generated tasks (``num_tasks``), a named ``split``, or
    the example tasks."""
    if options.split is not None:
        if options.input is not None or options.num_tasks is not None or found is None:
            raise ConfigError(
                "--split runs a split of --env's own tasks; it cannot be combined with --input, "
                "--num-tasks or a remote environment"
            )
        split = task_split(found.cls, options.split)
        check_input_file(split)
        return split
    if options.num_tasks is not None:
        if options.input is not None or found is None:
            raise ConfigError(
                "--num-tasks generates tasks from --env; it cannot be combined "
                "with --input or a remote environment"
            )
        return write_generated_tasks(
            found.build(),
            count=options.num_tasks,
            seed=options.seed,
            path=output.with_name(f"{output.stem}_tasks.jsonl"),
        )
    tasks = options.input or (found.example_tasks if found else None)
    if tasks is None:
        raise ConfigError("pass --input: there are no example tasks to fall back on")
    check_input_file(Path(tasks))
    return Path(tasks)


def _env_spec(given: dict[str, Any]) -> EnvSpec:
    env, token = given.get("env"), given.get("server_token")
    if isinstance(env, EnvSpec):
        if any(given.get(f) for f in ("env_args", "env_url", "env_cmd", "env_cmd_timeout")):
            raise TypeError(
                "env is an EnvSpec: put env_args, env_url, env_cmd and env_cmd_timeout in it"
            )
        return env
    fields: dict[str, Any] = {"args": dict(given.get("env_args") or {}), "token": token}
    if isinstance(env, str):
        fields["name"] = env
    elif env is not None:
        fields["name"] = getattr(env, "name", None)
        fields["environment"] = env
    if given.get("env_url"):
        fields["url"] = given["env_url"]
    if given.get("env_cmd"):
        fields["cmd"] = given["env_cmd"]
    if given.get("env_cmd_timeout") is not None:
        fields["cmd_timeout"] = given["env_cmd_timeout"]
    return validated(EnvSpec, fields, "env")


def _model_config(given: dict[str, Any]) -> ModelConfig:
    from palaestra.models.resolve import model_config

    model = given.get("model", "local")
    api_key, sampling = given.get("api_key"), given.get("sampling")
    if isinstance(model, ModelConfig):
        update: dict[str, Any] = {}
        if api_key is not None:
            update["api_key"] = api_key
        if sampling:
            update["sampling"] = {**model.sampling, **sampling}
        return validated(ModelConfig, {**model.model_dump(), **update}, "model")
    pool = isinstance(model, list | tuple) and all(isinstance(url, str) for url in model)
    if not (isinstance(model, str) or pool):
        raise ConfigError(
            f"model must be a name, a URL, a list of URLs or a ModelConfig, not {model!r}"
        )
    return model_config(model, api_key=api_key, sampling=sampling)


def _user_model_config(given: dict[str, Any]) -> ModelConfig | None:
    """``user_model`` as a ``ModelConfig`` (resolved as ``model`` is); None when not given."""
    from palaestra.models.resolve import model_config

    model = given.get("user_model")
    if model is None or isinstance(model, ModelConfig):
        return model
    pool = isinstance(model, list | tuple) and all(isinstance(url, str) for url in model)
    if not (isinstance(model, str) or pool):
        raise ConfigError(
            f"user_model must be a name, a URL, a list of URLs or a ModelConfig, not {model!r}"
        )
    return model_config(model)


def _agent_spec(given: dict[str, Any]) -> AgentSpec:
    agent, url, options = given.get("agent"), given.get("agent_url"), given.get("agent_options")
    if isinstance(agent, AgentSpec):
        if options or url:
            raise TypeError("agent is an AgentSpec: put agent_options and agent_url in it")
        return agent
    fields = {
        "name": agent,
        "options": dict(options or {}),
        "url": url,
        "token": given.get("server_token"),
    }
    return validated(AgentSpec, fields, "agent")


class _Callback:
    """A ``Progress`` that calls a function with the summary; messages go to the log."""

    def __init__(self, callback: ProgressCallback | None) -> None:
        self._callback = callback

    def start(self, summary: RunSummary) -> None:
        self.update(summary)

    def update(self, summary: RunSummary) -> None:
        if self._callback is None:
            return
        try:
            self._callback(summary)
        except Exception as error:  # the caller's code: named as theirs, and the run stops
            raise _callback_error(self._callback, error, summary) from error

    def message(self, text: str) -> None:
        _log.warning("%s", text)

    def stop(self) -> None:
        pass


def _callback_error(
    callback: ProgressCallback, error: Exception, summary: RunSummary
) -> CallbackError:
    """One line: the caller's function, what it raised and where, and that the run stopped
    with its rows kept (the collector writes a row before it reports it)."""
    function = inspect.unwrap(callback)  # eval's per-environment wrapper names the caller's
    name = getattr(function, "__qualname__", None) or repr(function)
    kept = ""
    if summary.files is not None:
        kept = f"; the rows so far are kept in {summary.files.output} (resume=True continues)"
    what = f"the progress callback {name}"
    return CallbackError(f"{raised(what, error, function)}: the run stopped{kept}")


def _note(progress: Progress, text: str) -> None:
    """Say ``text``, which is not a warning (the metrics URL once bound): through the
    progress's ``note`` when it has one (the command's shows it), else to the log."""
    note = getattr(progress, "note", None)
    if callable(note):
        note(text)
    else:
        _log.info("%s", text)


def as_progress(progress: Progress | ProgressCallback | None) -> Progress:
    """``progress`` as the collector's ``Progress``: a ``Progress`` as it is, a callable
    called with the summary, None silent (invalid-input warnings go to the log)."""
    if progress is not None and all(
        hasattr(progress, method) for method in ("start", "update", "message", "stop")
    ):
        return progress  # type: ignore[return-value]
    return _Callback(progress)  # type: ignore[arg-type]

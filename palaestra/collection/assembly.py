"""From a spec to running parts: the environment, its client, the model, the agent, the runner.

The one place that does it. ``palaestra.collect`` (and so ``palaestra collect``), ``palaestra
serve env|model|agent`` and the servers of a stack all go through here, so a spec means the
same thing wherever it was written. Everything here runs once per run or server, never per
rollout.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from palaestra._util.arguments import call_with, effective_keywords
from palaestra.agents.base import Agent, BoundAgent, RolloutRunner
from palaestra.agents.registry import AGENTS, agent_options, make_agent
from palaestra.environment.base import Environment
from palaestra.environment.finding.catalogue import environment_version
from palaestra.environment.finding.registry import find_environment, tasks_beside
from palaestra.environment.running.client import (
    DEFAULT_THREADS,
    EnvironmentClient,
    LocalEnvironmentClient,
    has_user,
)
from palaestra.environment.users import (
    LentUserModel,
    naming,
    user_model_failed,
    user_model_named,
)
from palaestra.errors import ConfigError, ModelError, ModelOutage
from palaestra.models.closed_book import ClosedBookModel
from palaestra.spec import AgentSpec, EnvSpec, ModelConfig, RunSpec
from palaestra.transport import redacted_url, shown_url
from palaestra.types import JsonDict

if TYPE_CHECKING:
    from palaestra.models.base import Model
    from palaestra.remote.agent import RemoteAgent

AGENT_REF_TYPE = "responses_api_agents"
"""NeMo Gym's ``agent_ref.type`` of a row written by an agent."""


@dataclass(slots=True)
class FoundEnvironment:
    """An environment to run in this process: found by name (not built yet) or given built."""

    name: str
    cls: type[Environment]
    args: dict[str, object]
    example_tasks: Path | None
    instance: Environment | None = None
    given: bool = field(default=False)
    """Whether ``instance`` was given from Python (its constructor arguments are unknown)."""

    def build(self) -> Environment:
        """The environment, built with ``args`` once (later calls return the same one)."""
        if self.instance is None:
            self.instance = call_with(self.cls, self.args, f"environment '{self.name}'")
        return self.instance

    def facts(self) -> JsonDict:
        """What a run's rows depend on: the name, the version and the constructor's arguments
        (and which of them only say where its tasks are: ``identity``'s ``env.located``)."""
        version = environment_version(self.cls)
        if self.given:
            return {"name": self.name, "version": version}
        facts: JsonDict = {
            "name": self.name,
            "version": version,
            "args": effective_keywords(self.cls, self.args),
        }
        located: tuple[str, ...] = getattr(self.cls, "location_args", ())
        if located:
            facts["located"] = list(located)
        return facts


def find(spec: EnvSpec) -> FoundEnvironment | None:
    """The environment ``spec`` names to run here; None when it is served (``url``) or absent.

    An ``Environment`` instance or class given from Python is taken as it is; a name, file or
    import path is looked up (nothing is built yet: ``build`` does that, checking ``args``).
    """
    if spec.url is not None and (spec.name or spec.environment is not None or spec.args):
        raise ConfigError(
            f"an environment is either served (url {spec.url}) or run here (name, args), not both"
        )
    given = spec.environment
    if isinstance(given, Environment):
        if spec.args:
            raise ConfigError(
                f"environment '{given.name}' was given built: pass its class to give it args"
            )
        cls = type(given)
        return FoundEnvironment(given.name, cls, {}, tasks_beside(cls), given, given=True)
    if isinstance(given, type) and issubclass(given, Environment):
        args = dict(spec.args)
        return FoundEnvironment(given.name, given, args, tasks_beside(given, args))
    if given is not None:
        raise ConfigError(f"env must be a name, an Environment or its class, not {given!r}")
    if spec.name is None:
        return None
    entry = find_environment(spec.name, spec.args)
    args = {**entry.args, **spec.args}
    return FoundEnvironment(entry.name, entry.environment, args, entry.example_tasks)


async def open_environment(
    spec: EnvSpec,
    found: FoundEnvironment | None,
    *,
    threads: int = DEFAULT_THREADS,
    user_model: Model | None = None,
) -> tuple[EnvironmentClient, str]:
    """The environment client and the agent the environment asks for.

    Served (``spec.url``): a ``RemoteEnvironmentClient``, connected (its tools learned); a
    served environment's user model is its server's (``serve env --user-model``).
    Otherwise the environment runs in a ``LocalEnvironmentClient`` with ``threads`` worker
    threads for its synchronous code (give it the rollouts in flight), lent ``user_model``
    (the caller's to close), and the models it opens are reached (``check_models``).
    """
    if spec.url is not None:
        from palaestra.remote.env import RemoteEnvironmentClient

        remote = await RemoteEnvironmentClient.connect(spec.url, token=spec.token)
        return remote, remote.default_agent
    if found is None:
        raise ConfigError("name an environment (a name, ./file.py or module:Class) or its url")
    environment = found.build()
    client = LocalEnvironmentClient(environment, threads=threads, user_model=user_model)
    try:
        await environment.check_models()  # a judge that is gone refuses the run now
    except BaseException:
        await client.aclose()
        raise
    return client, environment.default_agent


def build_agent(spec: AgentSpec, default: str) -> Agent:
    """The agent ``spec`` names (``default``, the environment's own, when it names none)."""
    return make_agent(spec.name or default, **spec.options)


def model_for(config: ModelConfig, agent: str | None) -> ModelConfig:
    """``config`` as agent ``agent`` runs it: an agent that records tokens (a harness behind
    the gateway says ``records_tokens``) gets the embedded model in token mode, so its rows
    carry the ids a trainer needs, unless the options already say how to capture them."""
    if agent is None or config.backend != "local":
        return config
    if "token_mode" in config.options or "return_tokens" in config.options:
        return config
    if not getattr(AGENTS.load(agent).value, "records_tokens", False):
        return config
    return config.model_copy(update={"options": {**config.options, "token_mode": True}})


def build_model(config: ModelConfig) -> Model:
    """The model ``config`` describes (``palaestra.models.build_model``)."""
    from palaestra.models.backends import build_model as build

    return build(config)


@contextlib.asynccontextmanager
async def opened_user_model(
    config: ModelConfig | None,
    policy: tuple[ModelConfig, Model] | None = None,
    *,
    closed_book: bool = False,
) -> AsyncIterator[Model | None]:
    """The user model ``config`` describes, checked (reached, or its weights loaded) and
    closed on exit; None when there is none.

    The model is lent as a ``LentUserModel``, so that its failures say "the user model" and
    where it is (a run has two models). When it is the policy's own model (the same config
    but for sampling, which the collector writes into each task: ``--model local --user-model
    local``), it is ``policy``'s model object itself, so the embedded model is loaded once and
    one endpoint's connections serve both. Its calls then count in that model's request
    statistics. ``closed_book``: a model built here sends its requests without hosted tools
    (``palaestra.models.closed_book``), as the policy's does.
    """
    if config is None:
        yield None
        return
    urls = [shown_url(url) for url in (config.urls or ([config.url] if config.url else []))]
    if policy is not None and same_model(config, policy[0]):
        yield LentUserModel(policy[1], urls, config.backend)
        return
    try:
        model = build_model(config)
    except ConfigError as error:
        raise ConfigError(f"{naming(urls, config.backend, str(error))}: {error}") from None
    sent: Model = ClosedBookModel(model) if closed_book else model
    lent = LentUserModel(sent, urls, config.backend)
    try:
        await checked_user_model(lent)
        yield lent
    finally:
        await model.aclose()


async def checked_user_model(lent: LentUserModel) -> None:
    """Reach the user model (or load its weights) before any rollout. Every error names it
    and where it is: one that is gone is a ``ModelOutage`` (``the user model is unreachable:
    ...``), any other a one-line ``ConfigError``."""
    try:
        await lent.check()
    except ModelError as error:
        failed = user_model_failed(error, lent)
        if isinstance(failed, ModelOutage):
            raise failed from None
        raise ConfigError(failed.reason) from None
    except ConfigError as error:
        raise ConfigError(f"{user_model_named(lent, str(error))}: {error}") from None


def same_model(one: ModelConfig, other: ModelConfig) -> bool:
    """Whether two configs name one model (all but ``sampling`` equal, the key included)."""
    return one.model_copy(update={"sampling": {}}) == other.model_copy(
        update={"sampling": {}}
    ) and (one.api_key == other.api_key)


def model_facts(config: ModelConfig) -> JsonDict:
    """What a run's rows depend on in the model: which one, where, and its backend options
    (not the key, retries or timeouts; the sampling overrides are recorded by the collector).
    A pool's ``urls`` are recorded but not compared (``identity.NOT_COMPARED``): its replicas
    serve one model, so a resume with one replica more or fewer continues the run."""
    config = without_credentials(config)
    facts: JsonDict = {
        "backend": config.backend,
        "url": config.url,
        "model": config.model,
        "options": dict(config.options),
    }
    if config.urls:
        facts["urls"] = list(config.urls)
    return facts


def without_credentials(config: ModelConfig) -> ModelConfig:
    """``config`` as a run saves it: its URLs without credentials (``redacted_url``; a key in
    a query string is kept as ``***``). Nothing reads a saved URL back to send a request."""
    url = redacted_url(config.url) if config.url is not None else None
    urls = [redacted_url(each) for each in config.urls]
    if url == config.url and urls == config.urls:
        return config
    return config.model_copy(update={"url": url, "urls": urls})


@dataclass(slots=True)
class Runner:
    """A run's parts put together: what the collector drives, and how its rows are labelled."""

    runner: RolloutRunner
    label: str
    """``agent_ref.name`` of every row: ``<environment>_<agent>``."""
    facts: JsonDict
    """The environment, agent and model as the run's identity records them."""


@contextlib.asynccontextmanager
async def open_runner(
    spec: RunSpec, found: FoundEnvironment | None, *, threads: int = DEFAULT_THREADS
) -> AsyncIterator[Runner]:
    """The runner of ``spec``: a served agent (``spec.agent.url``), or an agent here bound to
    the environment (``found``, or served at ``spec.env.url``) and the model. Closed on exit.
    """
    async with contextlib.AsyncExitStack() as stack:
        user_model_here(spec)  # a user model named for a served part: refused
        if spec.agent.url is not None:
            remote = await _remote_agent(spec.agent, stack)
            facts: JsonDict = {"env": _env_facts(spec.env, found), "agent": {"url": remote.url}}
            yield Runner(remote, remote_label(remote), facts)
            return
        model: Model = build_model(model_for(spec.model, spec.agent.name))
        stack.push_async_callback(model.aclose)
        closed = closed_book(spec.collection.hosted_tools, found)
        if closed:
            model = ClosedBookModel(model)
        user_model = await stack.enter_async_context(
            opened_user_model(user_model_here(spec), (spec.model, model), closed_book=closed)
        )
        env, default = await open_environment(
            spec.env, found, threads=threads, user_model=user_model
        )
        stack.push_async_callback(env.aclose)
        agent = build_agent(spec.agent, default)
        close_agent = getattr(agent, "aclose", None)
        if callable(close_agent):  # e.g. a harness agent's gateway, before the model closes
            stack.push_async_callback(close_agent)
        facts = bound_facts(spec, found, spec.agent.name or default)
        if found is None:  # served: the version its server announces, if it does
            facts["env"] = {**(facts["env"] or {}), **served_version(env)}
        bound = BoundAgent(agent, env, model, closed_book=closed)
        yield Runner(bound, f"{env.name}_{agent.name}", facts)


def closed_book(hosted_tools: bool, found: FoundEnvironment | None) -> bool:
    """Whether a run's (or an agent server's) model requests go without provider-hosted
    tools: unless it opts in (``hosted_tools``), they do for an environment that declares no
    network (``Environment.network``), and for a served one, which cannot say (closed by
    default)."""
    if hosted_tools:
        return False
    return found is None or not found.cls.network


def bound_facts(spec: RunSpec, found: FoundEnvironment | None, agent: str) -> JsonDict:
    """The identity facts of a run of the agent named ``agent`` bound here (``Runner.facts``);
    ``palaestra.distributed`` works them out before its workers start."""
    facts: JsonDict = {
        "env": _env_facts(spec.env, found),
        "agent": {"name": agent, "options": agent_options(agent, spec.agent.options)},
        "model": model_facts(spec.model),
        "closed_book": closed_book(spec.collection.hosted_tools, found),
    }
    if spec.user_model is not None:  # only when named: a run without one reads as before
        facts["user_model"] = model_facts(spec.user_model)
    return facts


def user_model_for(found: FoundEnvironment | None, user_model: ModelConfig | None) -> None:
    """Refuse a user model named for an environment run here that has no simulated user
    (``has_user``): nothing would ask it, yet it would be reached before the run, and one
    that is down would stop a run that never needed it."""
    if user_model is not None and found is not None and not has_user(found.cls):
        raise ConfigError(f"--user-model: environment {found.name} has no simulated user")


def user_model_here(spec: RunSpec) -> ModelConfig | None:
    """The user model to open in this process: a served environment has its own (its server's
    ``--user-model``), so naming one for it is a mistake, not silently ignored."""
    served = spec.env.url or spec.env.cmd
    if spec.user_model is not None and served is not None:
        raise ConfigError(
            f"the environment is served ({served}): its user model is its server's "
            "(palaestra serve env --user-model), not this run's"
        )
    if spec.user_model is not None and spec.agent.url is not None:
        raise ConfigError(
            f"the agent is served at {spec.agent.url}: the user model is its server's"
        )
    return spec.user_model


async def _remote_agent(spec: AgentSpec, stack: contextlib.AsyncExitStack) -> RemoteAgent:
    """A served agent, asked its name (``GET /``) before the run so rows carry it."""
    from palaestra.remote.agent import RemoteAgent

    if spec.name or spec.options:
        raise ConfigError(
            f"the agent is served at {spec.url}: its name and options are the server's"
        )
    assert spec.url is not None
    remote = RemoteAgent(spec.url, token=spec.token)
    stack.push_async_callback(remote.aclose)
    await remote.check()
    return remote


def remote_label(remote: RemoteAgent) -> str:
    """A served agent's rows are labelled as the same agent's rows would be here:
    ``<environment>_<agent>`` from what its ``GET /`` says (a palaestra agent server names
    both), else its agent's name alone."""
    environment = remote.environment
    return f"{environment}_{remote.name}" if environment else remote.name


def served_version(env: EnvironmentClient) -> JsonDict:
    """``{"version": N}`` for a served environment whose server announces its version (a
    palaestra server's ``/tools``), else nothing."""
    from palaestra.remote.env import RemoteEnvironmentClient

    if isinstance(env, RemoteEnvironmentClient) and env.version is not None:
        return {"version": env.version}
    return {}


def _env_facts(spec: EnvSpec, found: FoundEnvironment | None) -> JsonDict | None:
    if spec.cmd is not None:  # a started server: the command, not the port it got this time
        return {"cmd": spec.cmd}
    if spec.url is not None:
        return {"url": spec.url}
    return found.facts() if found is not None else None

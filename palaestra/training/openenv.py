"""Every palaestra environment behind OpenEnv's harness API (OpenEnv 0.3 and 0.10).

OpenEnv's harness (``openenv.core.harness``, RFC 005) drives rollouts through a
``ResourceSessionFactory``: ``create(task)`` gives a session with ``initial_messages``,
``list_tools``, ``call_tool``, ``verify`` and ``close``. ``PalaestraSessionFactory`` is one over
any palaestra environment (a name, a file, a class instance, an ``EnvironmentClient`` or the URL
of a served environment), so TRL's harness rollout function (``build_harness_rollout_func``)
and OpenEnv's ``CollectRunner`` run palaestra environments::

    from openenv.core.harness import MCPHarnessAdapter, build_harness_rollout_func
    from palaestra.training.openenv import PalaestraSessionFactory

    factory = PalaestraSessionFactory("counter")             # or "http://127.0.0.1:8000"
    rollout_func = build_harness_rollout_func(
        session_factory=factory, harness_adapter=MCPHarnessAdapter(), model_step_builder=...
    )

A task is a palaestra task row (a dict with ``responses_create_params``), an index into
``tasks``, the prompt (chat messages) of one of ``tasks`` (what TRL's asynchronous GRPO passes
from its dataset: build it from ``prompts()``), or ``None`` (the next of ``tasks``, else one the
environment generates from ``seed``). Tool outputs reach the model as the text palaestra's own
agent sends; ``verify`` scores the harness's transcript with the environment's verifier and
forwards its reward. A verdict that is a failure raises ``EpisodeFailed`` (kind and reason):
OpenEnv's collector counts it as failed, TRL's rollout function stops and TRL's asynchronous
GRPO leaves the rollout unscored; never a reward of 0.

The OpenEnv calls are synchronous; palaestra's environment code is async. The factory runs one
event loop in a daemon thread for all its sessions (a call hops to it and back, at a small CPU
cost: benchmarks/results/micro.md), so it may be used from any thread. Close the factory
(``close()`` or ``with``) to release it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any, TypeVar

from palaestra._util.loop import LoopThread
from palaestra.environment.base import Environment
from palaestra.environment.running.client import EnvironmentClient, LocalEnvironmentClient
from palaestra.errors import ConfigError, InputError
from palaestra.training.openenv_episode import (
    Episode,
    EpisodeFailed,
    prompt_messages,
    transcript_items,
    verdict_metrics,
)
from palaestra.types import JsonDict

try:
    from openenv.core.env_server.mcp_types import (  # type: ignore[import-not-found, unused-ignore]
        Tool,
    )
    from openenv.core.harness import (  # type: ignore[import-not-found, unused-ignore]
        ResourceSession,
        ResourceSessionFactory,
        ToolResult,
        VerifyResult,
    )
except ImportError as missing:
    raise ConfigError(
        "palaestra.training.openenv needs OpenEnv: pip install 'openenv>=0.10,<0.11' (or the "
        "older line, 'openenv-core>=0.3,<0.4')"
    ) from missing

__all__ = ["EpisodeFailed", "PalaestraSession", "PalaestraSessionFactory"]

T = TypeVar("T")


class PalaestraSession(ResourceSession):  # type: ignore[misc, unused-ignore]
    """One rollout: a seeded palaestra session (OpenEnv's ``ResourceSession``)."""

    def __init__(self, episode: Episode, loop: LoopThread) -> None:
        self.episode = episode
        self._loop = loop
        self._initial = episode.initial_messages()

    def initial_messages(self) -> list[JsonDict]:
        return [dict(message) for message in self._initial]

    def list_tools(self) -> list[Any]:
        return [
            Tool(name=t["name"], description=t["description"], input_schema=t["inputSchema"])
            for t in self.episode.tools()
        ]

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """The tool's output as text (never a dict, so no field of it is read as a reward)."""
        outcome = self._loop.run(self.episode.call_tool(name, dict(arguments)))
        return ToolResult(data=outcome.text, error=outcome.text if outcome.rejected else None)

    def verify(self, transcript: list[JsonDict], final_state: Any | None = None) -> Any:
        """Score ``transcript`` (the harness's chat messages) with the environment's verifier."""
        # The trajectory starts at the model's first turn: the prompt (and any system message a
        # harness put before it) is not output.
        first = next((i for i, m in enumerate(transcript) if m.get("role") == "assistant"), None)
        turns = [] if first is None else transcript[first:]
        response = self.episode.response(transcript_items(turns))
        verdict = self._loop.run(self.episode.verify(response))
        return VerifyResult(
            env_reward=float(verdict.reward),
            done=True,
            metrics=verdict_metrics(verdict),
            artifacts={"verdict": verdict.to_fields()},
        )

    def close(self) -> None:
        self._loop.run(self.episode.close())


class PalaestraSessionFactory(ResourceSessionFactory):  # type: ignore[misc, unused-ignore]
    """OpenEnv's ``ResourceSessionFactory`` over a palaestra environment.

    ``env``: an environment name, file (``./my_env.py``) or import path (``pkg.mod:Class``), an
    ``Environment`` instance, an ``EnvironmentClient``, or the URL of a served environment
    (``palaestra serve env``; ``token`` is its bearer token). ``tasks``: the rows a ``create``
    without a task row cycles through.
    """

    def __init__(
        self,
        env: str | Environment | EnvironmentClient,
        *,
        tasks: list[JsonDict] | None = None,
        token: str | None = None,
    ) -> None:
        self._environment: Environment | None = None
        self._tasks = list(tasks or [])
        self._next_task: Iterator[int] = itertools.count()
        self._loop = LoopThread("palaestra-openenv")
        try:
            self.client = self._loop.run(self._client_of(env, token))
            if self.client.has_user:
                # OpenEnv's harness owns the loop and has no user turn: the user would never
                # speak. palaestra's OpenEnv server runs the user on each model message.
                self._loop.run(self.client.aclose())
                raise ConfigError(
                    f"environment '{self.client.name}' has a simulated user, and OpenEnv's "
                    "harness has no user turn: serve it with `palaestra serve openenv` (the "
                    "user answers each message action) or collect with palaestra's agents"
                )
        except BaseException:
            self._loop.stop()
            raise

    async def _client_of(
        self, env: str | Environment | EnvironmentClient, token: str | None
    ) -> EnvironmentClient:
        if isinstance(env, str) and env.startswith(("http://", "https://")):
            from palaestra.remote.env import RemoteEnvironmentClient

            return await RemoteEnvironmentClient.connect(env, token=token)
        if isinstance(env, str):
            from palaestra.environment.finding.registry import find_environment

            env = find_environment(env).environment()
        if isinstance(env, Environment):
            self._environment = env
            return LocalEnvironmentClient(env)
        return env

    def create(
        self, task: Any = None, seed: int | None = None, episode_id: str | None = None
    ) -> PalaestraSession:
        episode = self._loop.run(Episode.start(self.client, self._task_row(task, seed), episode_id))
        return PalaestraSession(episode, self._loop)

    def prompts(self) -> list[list[JsonDict]]:
        """Each of ``tasks``' prompt as chat messages: a trainer's dataset column (``prompt``)
        whose rows ``create`` takes back as the task they name."""
        return [prompt_messages(row) for row in self._tasks]

    def _task_row(self, task: Any, seed: int | None) -> JsonDict:
        if isinstance(task, dict):
            return task
        if isinstance(task, list) and self._tasks:
            # TRL's asynchronous GRPO (HarnessRolloutWorker) hands create() its dataset row's
            # prompt: the task of ``tasks`` with that prompt (roles and texts compared).
            wanted = _said(task)
            for row in self._tasks:
                if _said(prompt_messages(row)) == wanted:
                    return row
            raise InputError(
                "no task of this factory has this prompt: build the trainer's dataset from "
                "factory.prompts()",
                field="task",
            )
        if isinstance(task, int) and not isinstance(task, bool) and self._tasks:
            if not 0 <= task < len(self._tasks):  # never wrapped: index 999 of 2 tasks is a bug
                raise InputError(
                    f"task index {task} is out of range: this factory has {len(self._tasks)} "
                    f"tasks (index 0 to {len(self._tasks) - 1})",
                    field="task",
                )
            return self._tasks[task]
        if task is None and self._tasks:
            return self._tasks[next(self._next_task) % len(self._tasks)]
        if task is None and self._environment is not None:
            try:
                return next(iter(self._environment.generate_tasks(1, seed or 0)))
            except NotImplementedError:
                pass
        raise InputError(
            f"no task for this rollout (got {type(task).__name__}): pass a task row (a dict "
            "with responses_create_params) or the prompt of one of the factory's tasks=[...], "
            "or use an environment that generates tasks",
            field="task",
        )

    def close(self) -> None:
        """Close the environment client (its open sessions too) and stop the loop thread."""
        try:
            self._loop.run(self.client.aclose())
        finally:
            self._loop.stop()

    def __enter__(self) -> PalaestraSessionFactory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _said(messages: list[Any]) -> list[tuple[Any, Any]]:
    """A chat prompt as (role, content) pairs: what identifies a task's prompt, whatever extra
    keys a dataset added to its messages."""
    return [(m.get("role"), m.get("content")) for m in messages if isinstance(m, dict)]

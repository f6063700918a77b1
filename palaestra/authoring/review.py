"""``check_environment``: an environment checked the way a reviewer would, check by check."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from palaestra._util.arguments import call_with, check_keywords
from palaestra.authoring.examples import check_task_tools, check_tasks_parse
from palaestra.authoring.golden import check_golden_answers
from palaestra.authoring.reference import reference_checks
from palaestra.authoring.report import Check, EnvironmentReport
from palaestra.authoring.schemas import check_tool_docs, check_tool_schemas
from palaestra.authoring.smoke import SmokeOptions, smoke_checks
from palaestra.environment.base import Environment
from palaestra.environment.client import LocalEnvironmentClient
from palaestra.environment.registry import find_environment, tasks_beside
from palaestra.errors import ConfigError

SMOKE_CHECKS = ("smoke run", "sessions closed", "framework CPU")
DEFAULT_SMOKE = SmokeOptions()


def check_environment(
    env: str | type[Environment] | Environment,
    *,
    env_args: Mapping[str, Any] | None = None,
    tasks: str | os.PathLike[str] | None = None,
    smoke: SmokeOptions | None = DEFAULT_SMOKE,
) -> EnvironmentReport:
    """Check an environment as a reviewer would and return the report (never raises for a
    failed check: ``report.ok`` says whether all passed).

    ``env`` is what ``collect`` takes: a registered name, ``"./file.py[:Class]"``,
    ``"module:Class"``, an ``Environment`` class (built with ``env_args``) or instance.
    ``tasks`` replaces the example tasks beside the environment's module. The checks:

    - ``tool schemas``: each tool's parameters are a valid JSON Schema object, names unique;
    - ``tool docs``: the environment, each tool and each parameter are described;
    - ``example tasks``: every task line parses as palaestra's collector reads it;
    - ``task tools``: the tools tasks name exist;
    - ``golden answers``: ``verify`` gives 1 on each task's ``golden_response`` and 0 on its
      wrong one (skipped when no task carries one; see ``palaestra.authoring.golden``);
    - ``oracle``, ``null agent``: replaying each task's gold actions (``Environment.
      gold_actions``) scores 1, and an agent that only refuses scores 0 wherever the gold
      actions hold an action (skipped without gold actions; ``palaestra.authoring.reference``);
    - ``smoke run``, ``sessions closed``, ``framework CPU``: a few tasks collected end to end
      with ``smoke.model`` (default the embedded one) and no failure of palaestra's own, every
      session closed by its rollout, and palaestra's CPU per rollout outside the model (see
      ``palaestra.authoring.smoke``). ``smoke=None`` skips them.

    An environment that cannot be found or built is a one-line ``ConfigError``.
    """
    return asyncio.run(check_environment_async(env, env_args=env_args, tasks=tasks, smoke=smoke))


async def check_environment_async(
    env: str | type[Environment] | Environment,
    *,
    env_args: Mapping[str, Any] | None = None,
    tasks: str | os.PathLike[str] | None = None,
    smoke: SmokeOptions | None = DEFAULT_SMOKE,
) -> EnvironmentReport:
    """``check_environment`` for code already inside an event loop."""
    cls, source, build = _environment(env, dict(env_args or {}))
    report = EnvironmentReport(cls.name, source)
    report.checks += [check_tool_schemas(cls), check_tool_docs(cls)]
    path = Path(tasks) if tasks is not None else tasks_beside(cls)
    parsed, rows = check_tasks_parse(path)
    report.checks += [parsed, check_task_tools(cls, rows)]
    client = LocalEnvironmentClient(build())
    try:
        report.checks.append(await check_golden_answers(client, rows))
        report.checks += await reference_checks(client, rows)
    finally:
        await client.aclose()
    if smoke is None:
        report.checks += [Check.skipped(name, "no model (--no-model)") for name in SMOKE_CHECKS]
    elif path is None or not rows:
        report.checks += [Check.skipped(name, "no example tasks to run") for name in SMOKE_CHECKS]
    else:
        report.checks += await smoke_checks(build(), path, smoke)
    return report


def _environment(
    env: str | type[Environment] | Environment, args: dict[str, Any]
) -> tuple[type[Environment], str, Callable[[], Environment]]:
    """The class, where it came from, and a function building a fresh instance of it."""
    if isinstance(env, Environment):
        if args:
            raise ConfigError(f"environment '{env.name}' was given built: pass its class")
        return type(env), "given from Python", lambda: env
    if isinstance(env, str):
        entry = find_environment(env)
        cls, source = entry.environment, entry.source
    elif isinstance(env, type) and issubclass(env, Environment):
        cls, source = env, f"{env.__module__}:{env.__qualname__}"
    else:
        raise ConfigError(f"env must be a name, an Environment or its class, not {env!r}")
    check_keywords(cls, args, f"environment '{cls.name}'")  # a wrong argument: one line, now

    def build() -> Environment:
        return call_with(cls, args, f"environment '{cls.name}'")

    return cls, source, build

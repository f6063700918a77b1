"""``check_environment``: an environment checked the way a reviewer would, check by check."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import random
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

from palaestra._util.arguments import call_with, check_keywords
from palaestra.authoring.cheats import DEFAULT_SAMPLE, cheat_check, is_machine_environment
from palaestra.authoring.client import ReviewClient
from palaestra.authoring.determinism import determinism_checks
from palaestra.authoring.examples import check_task_tools, check_tasks_parse
from palaestra.authoring.golden import check_golden_answers
from palaestra.authoring.reference import reference_checks
from palaestra.authoring.report import Check, EnvironmentReport
from palaestra.authoring.schemas import check_tool_docs, check_tool_schemas
from palaestra.authoring.smoke import SmokeOptions, smoke_checks
from palaestra.collection.assembly import build_model
from palaestra.environment.base import Environment
from palaestra.environment.finding.registry import find_environment, tasks_beside
from palaestra.errors import ConfigError
from palaestra.models.base import Model
from palaestra.spec import ModelConfig

SMOKE_CHECKS = ("smoke run", "sessions closed", "framework CPU")
DEFAULT_SMOKE = SmokeOptions()
UserModel = str | ModelConfig | Model | None
"""A user model as ``check_environment`` takes it (see there)."""


def check_environment(
    env: str | type[Environment] | Environment,
    *,
    env_args: Mapping[str, Any] | None = None,
    tasks: str | os.PathLike[str] | None = None,
    smoke: SmokeOptions | None = DEFAULT_SMOKE,
    user_model: UserModel = None,
    cheat_sample: int = DEFAULT_SAMPLE,
    sample: int | None = None,
    seed: int = 0,
) -> EnvironmentReport:
    """Check an environment as a reviewer would and return the report (never raises for a
    failed check: ``report.ok`` says whether all passed).

    ``env`` is what ``collect`` takes: a registered name, ``"./file.py[:Class]"``,
    ``"module:Class"``, an ``Environment`` class (built with ``env_args``) or instance.
    ``tasks`` replaces the example tasks beside the environment's module; ``sample`` keeps that
    many of them, drawn with ``seed`` (the same seed, the same tasks), for every check below
    but the smoke run. The checks:

    - ``tool schemas``: each tool's parameters are a valid JSON Schema object, names unique;
    - ``tool docs``: the environment, each tool and each parameter are described;
    - ``example tasks``: every task line parses as palaestra's collector reads it;
    - ``task tools``: the tools tasks name exist;
    - ``golden answers``: ``verify`` gives 1 on each task's ``golden_response`` and 0 on its
      wrong one (skipped when no task carries one; see ``palaestra.authoring.golden``);
    - ``oracle``, ``null agent``: replaying each task's gold actions (``Environment.
      gold_actions``) scores 1, and an agent that only refuses scores 0 wherever the gold
      actions hold an action (skipped without gold actions; ``palaestra.authoring.reference``);
    - ``generated tasks``, ``seeded start``: ``generate_tasks`` twice with ``seed`` gives the
      same tasks, and one task seeded twice starts the same (``palaestra.authoring.
      determinism``);
    - ``cheats`` (machine environments only: a ``HarborEnvironment``): every known way to forge
      a machine task's reward, replayed through the ``bash`` tool on ``cheat_sample`` example
      tasks of each category, scores exactly 0 (``palaestra.authoring.cheats``; 0 skips it);
    - ``smoke run``, ``sessions closed``, ``framework CPU``: a few tasks collected end to end
      with ``smoke.model`` (default the embedded one) and no failure of palaestra's own, every
      session closed by its rollout, and palaestra's CPU per rollout outside the model (see
      ``palaestra.authoring.smoke``). ``smoke=None`` skips them.

    ``user_model`` plays an environment's simulated user (``EnvironmentContext.user_model``) in
    the oracle, null and smoke runs: ``local``, a base URL or configured name, a
    ``ModelConfig`` (opened, checked and closed here) or a ``Model`` (used as it is). Without
    one, an environment whose user a script can play (``Environment.scripted_user_args``: tau2's
    gold user) is built with it, and the oracle and null checks of any other user that needs a
    model are skipped, saying so.

    An environment that cannot be found or built is a one-line ``ConfigError``.
    """
    return asyncio.run(
        check_environment_async(
            env,
            env_args=env_args,
            tasks=tasks,
            smoke=smoke,
            user_model=user_model,
            cheat_sample=cheat_sample,
            sample=sample,
            seed=seed,
        )
    )


async def check_environment_async(
    env: str | type[Environment] | Environment,
    *,
    env_args: Mapping[str, Any] | None = None,
    tasks: str | os.PathLike[str] | None = None,
    smoke: SmokeOptions | None = DEFAULT_SMOKE,
    user_model: UserModel = None,
    cheat_sample: int = DEFAULT_SAMPLE,
    sample: int | None = None,
    seed: int = 0,
) -> EnvironmentReport:
    """``check_environment`` for code already inside an event loop."""
    cls, source, build, examples = _environment(env, dict(env_args or {}), user_model is None)
    report = EnvironmentReport(cls.name, source)
    path = Path(tasks) if tasks is not None else examples
    parsed, rows = check_tasks_parse(path)
    if sample is not None and sample < len(rows):
        chosen = sorted(random.Random(seed).sample(range(len(rows)), sample))
        rows = [rows[index] for index in chosen]
        parsed = dataclasses.replace(
            parsed, reason=f"{parsed.reason}; {sample} drawn with seed {seed}"
        )
    async with _opened(user_model) as user:
        client = ReviewClient(build(), user_model=user)
        # the built instance's tools: an MCP server's are listed on it, not on the class
        specs = client.environment.tool_specs
        report.checks += [check_tool_schemas(cls, specs), check_tool_docs(cls, specs)]
        report.checks += [parsed, check_task_tools(cls, rows, specs)]
        try:
            report.checks.append(await check_golden_answers(client, rows))
            report.checks += await reference_checks(client, rows, user_model=user is not None)
            report.checks += await determinism_checks(client, rows, seed)
            if is_machine_environment(client):
                report.checks.append(await cheat_check(client, rows, cheat_sample))
        finally:
            await client.aclose()
        if smoke is None:
            report.checks += [Check.skipped(n, "no model (--no-model)") for n in SMOKE_CHECKS]
        elif path is None or not rows:
            report.checks += [Check.skipped(n, "no example tasks to run") for n in SMOKE_CHECKS]
        else:
            report.checks += await smoke_checks(build(), path, smoke, user_model=user)
    return report


@contextlib.asynccontextmanager
async def _opened(user_model: UserModel) -> AsyncIterator[Model | None]:
    """The user model to lend: a ``Model`` as given; a spec or config opened, checked (a
    model that cannot be reached is one line now) and closed on exit."""
    if user_model is None or isinstance(user_model, Model):
        yield user_model
        return
    from palaestra.models.resolve import model_config

    config = model_config(user_model) if isinstance(user_model, str) else user_model
    model = build_model(config)
    try:
        await model.check()
        yield model
    finally:
        await model.aclose()


def _environment(
    env: str | type[Environment] | Environment, args: dict[str, Any], scripted: bool
) -> tuple[type[Environment], str, Callable[[], Environment], Path | None]:
    """The class, where it came from, a function building a fresh instance of it, and its
    example tasks; ``scripted`` (no user model): built with its ``scripted_user_args`` under
    ``args``."""
    if isinstance(env, Environment):
        if args:
            raise ConfigError(f"environment '{env.name}' was given built: pass its class")
        return type(env), "given from Python", lambda: env, tasks_beside(type(env))
    examples: Path | None
    if isinstance(env, str):
        entry = find_environment(env, args)
        cls, source, examples = entry.environment, entry.source, entry.example_tasks
        args = {**entry.args, **args}
    elif isinstance(env, type) and issubclass(env, Environment):
        cls, source = env, f"{env.__module__}:{env.__qualname__}"
        examples = tasks_beside(cls, args)
    else:
        raise ConfigError(f"env must be a name, an Environment or its class, not {env!r}")
    if scripted:
        args = {**cls.scripted_user_args, **args}
    check_keywords(cls, args, f"environment '{cls.name}'")  # a wrong argument: one line, now

    def build() -> Environment:
        return call_with(cls, args, f"environment '{cls.name}'")

    return cls, source, build, examples

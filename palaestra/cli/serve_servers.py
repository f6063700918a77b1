"""``palaestra serve env`` and ``palaestra serve agent``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console

from palaestra.agents import AGENT_NAMES
from palaestra.cli.errors import exit_on_user_error
from palaestra.errors import ConfigError

TOKEN_ENV = "PALAESTRA_SERVER_TOKEN"
F = TypeVar("F", bound=Callable[..., Any])

host_option = click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Interface to bind (127.0.0.1: this machine only).",
)
port_option = click.option(
    "--port",
    default=0,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port to bind; 0 picks a free one and prints it.",
)


def token_options(command: F) -> F:
    """``--token`` (or ``PALAESTRA_SERVER_TOKEN``) and ``--token-file``: the bearer token."""
    return with_token_options("Require this bearer token on every request.")(command)


def with_token_options(what: str) -> Callable[[F], F]:
    """The token options, ``--token``'s help starting with ``what``."""

    def add(command: F) -> F:
        command = click.option(
            "--token-file",
            type=click.Path(path_type=Path, dir_okay=False),
            help="Read the bearer token from this file (surrounding whitespace is dropped).",
        )(command)
        return click.option(
            "--token",
            envvar=TOKEN_ENV,
            show_envvar=True,
            help=f"{what} Given on the command line it is visible to every user of the "
            f"machine (ps): prefer {TOKEN_ENV} or --token-file.",
        )(command)

    return add


def read_token(token: str | None, token_file: Path | None) -> str | None:
    """The token to require: ``--token-file``'s content, else ``--token`` or the variable."""
    if token_file is None:
        return token or None
    try:
        text = token_file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or "not a text file"
        raise ConfigError(f"cannot read --token-file {token_file}: {reason}") from None
    if not text:
        raise ConfigError(f"--token-file {token_file} is empty")
    return text


@click.command("env")
@click.argument("env_spec")
@click.option(
    "--tasks",
    "tasks_path",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Tasks NeMo Evaluator clients address by index. Default: the example tasks.",
)
@click.option(
    "--max-sessions",
    type=click.IntRange(min=0),
    help="Live sessions the server holds; a seed over the cap is answered 503 with "
    "Retry-After (clients wait and retry). 0 lifts the cap. Default: 32768.",
)
@click.option(
    "--max-task-bytes",
    type=click.IntRange(min=0),
    help="Largest task (seed body) a session may hold, in bytes; a larger one is answered "
    "413. 0 lifts the cap. Default: 1048576 (1 MiB).",
)
@host_option
@port_option
@token_options
def serve_env_command(
    env_spec: str,
    tasks_path: Path | None,
    max_sessions: int | None,
    max_task_bytes: int | None,
    host: str,
    port: int,
    token: str | None,
    token_file: Path | None,
) -> None:
    """Serve an environment (NeMo Gym resources-server and NeMo Evaluator protocols)."""
    from palaestra.registry import find_environment
    from palaestra.serve.env_app import (
        DEFAULT_MAX_SESSIONS,
        DEFAULT_MAX_TASK_BYTES,
        environment_app,
    )
    from palaestra.serve.evaluator import load_dataset

    console = Console(stderr=True)
    with exit_on_user_error(console):
        token = read_token(token, token_file)
        entry = find_environment(env_spec)
        dataset = load_dataset(tasks_path or entry.example_tasks)
        app = environment_app(
            entry.environment(),
            dataset=dataset,
            max_sessions=_cap(max_sessions, DEFAULT_MAX_SESSIONS),
            max_task_bytes=_cap(max_task_bytes, DEFAULT_MAX_TASK_BYTES),
        )
        _serve(app, host=host, port=port, token=token, label=f"environment {entry.name}")


def _cap(value: int | None, default: int) -> int | None:
    """A cap flag: unset is the server's default, 0 lifts the cap."""
    if value is None:
        return default
    return value or None


@click.command("agent")
@click.option("--env", "env_spec", help="Environment to run in process (name, file or module).")
@click.option("--env-url", help="A running environment server to use instead.")
@click.option(
    "--model",
    "model_spec",
    default="local",
    show_default=True,
    help="'local', an OpenAI-compatible base URL or a model-config name.",
)
@click.option("--model-name", help="The `model` field sent to a remote endpoint.")
@click.option(
    "--api", type=click.Choice(["auto", "responses", "chat"]), default="auto", show_default=True
)
@click.option(
    "--api-key",
    envvar="OPENAI_API_KEY",
    show_envvar=True,
    help="Bearer token for the model endpoint (prefer the variable: argv is visible in ps).",
)
@click.option(
    "--agent",
    "agent_name",
    type=click.Choice(AGENT_NAMES),
    help="The harness. Default: the environment's own (tool_calling for remote environments).",
)
@click.option("--max-steps", type=click.IntRange(min=1), default=8, show_default=True)
@host_option
@port_option
@token_options
def serve_agent_command(**options: Any) -> None:
    """Serve an agent bound to an environment and a model (/run, /v1/responses)."""
    console = Console(stderr=True)
    with exit_on_user_error(console):
        options["token"] = read_token(options["token"], options.pop("token_file"))
        if bool(options["env_spec"]) == bool(options["env_url"]):
            raise ConfigError("give exactly one of --env and --env-url")
        from palaestra.serve.uvicorn_runner import run_on_fast_loop

        run_on_fast_loop(_serve_agent(options))


async def _serve_agent(options: dict[str, Any]) -> None:
    from palaestra.agents import make_agent
    from palaestra.env_client import EnvironmentClient, LocalEnvironmentClient
    from palaestra.models.resolve import open_model
    from palaestra.registry import find_environment
    from palaestra.remote.env import RemoteEnvironmentClient
    from palaestra.serve.agent_app import agent_app

    env: EnvironmentClient
    default_agent = "tool_calling"
    if options["env_url"]:
        remote = await RemoteEnvironmentClient.connect(options["env_url"], token=options["token"])
        default_agent, env = remote.default_agent, remote
    else:
        environment = find_environment(options["env_spec"]).environment()
        default_agent = environment.default_agent
        env = LocalEnvironmentClient(environment)
    model = open_model(
        options["model_spec"],
        api=options["api"],
        model_name=options["model_name"],
        api_key=options["api_key"],
    )
    await model.check()
    agent = make_agent(options["agent_name"] or default_agent, max_steps=options["max_steps"])
    app = agent_app(agent, env, model)
    await serve_guarded(
        app,
        host=options["host"],
        port=options["port"],
        token=options["token"],
        label=f"agent {agent.name} on {env.name}",
    )


def _serve(app: Any, *, host: str, port: int, token: str | None, label: str) -> None:
    from palaestra.serve.uvicorn_runner import run_on_fast_loop

    run_on_fast_loop(serve_guarded(app, host=host, port=port, token=token, label=label))


async def serve_guarded(
    app: Any, *, host: str, port: int, token: str | None, label: str, path: str = ""
) -> None:
    """Serve behind the token/body-size guard; announce the address for humans and supervisors."""
    from palaestra.serve.announce import ready_line, serve_announced
    from palaestra.serve.guard import Guard

    def on_ready(url: str) -> None:
        print(f"serving {label} on {url}{path}", file=sys.stderr, flush=True)
        print(ready_line(url), flush=True)

    await serve_announced(Guard(app, token=token), host=host, port=port, on_ready=on_ready)

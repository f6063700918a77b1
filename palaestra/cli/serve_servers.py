"""``palaestra serve env`` and ``palaestra serve agent``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from palaestra.agents import AGENT_NAMES
from palaestra.cli.errors import exit_on_user_error
from palaestra.errors import ConfigError

TOKEN_ENV = "PALAESTRA_SERVER_TOKEN"

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
token_option = click.option(
    "--token",
    envvar=TOKEN_ENV,
    show_envvar=True,
    help="Require this bearer token on every request.",
)


@click.command("env")
@click.argument("env_spec")
@click.option(
    "--tasks",
    "tasks_path",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Tasks NeMo Evaluator clients address by index. Default: the example tasks.",
)
@host_option
@port_option
@token_option
def serve_env_command(
    env_spec: str, tasks_path: Path | None, host: str, port: int, token: str | None
) -> None:
    """Serve an environment (NeMo Gym resources-server and NeMo Evaluator protocols)."""
    from palaestra.registry import find_environment
    from palaestra.serve.env_app import environment_app
    from palaestra.serve.evaluator import load_dataset

    console = Console(stderr=True)
    with exit_on_user_error(console):
        entry = find_environment(env_spec)
        dataset = load_dataset(tasks_path or entry.example_tasks)
        app = environment_app(entry.environment(), dataset=dataset)
        _serve(app, host=host, port=port, token=token, label=f"environment {entry.name}")


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
    "--agent",
    "agent_name",
    type=click.Choice(AGENT_NAMES),
    help="The harness. Default: the environment's own (tool_calling for remote environments).",
)
@click.option("--max-steps", type=click.IntRange(min=1), default=8, show_default=True)
@host_option
@port_option
@token_option
def serve_agent_command(**options: Any) -> None:
    """Serve an agent bound to an environment and a model (/run, /v1/responses)."""
    console = Console(stderr=True)
    with exit_on_user_error(console):
        if bool(options["env_spec"]) == bool(options["env_url"]):
            raise ConfigError("give exactly one of --env and --env-url")
        from palaestra.serve.uvicorn_runner import run_on_fast_loop

        run_on_fast_loop(_serve_agent(options))


async def _serve_agent(options: dict[str, Any]) -> None:
    from palaestra.agents import make_agent
    from palaestra.env_client import EnvironmentClient, LocalEnvironmentClient
    from palaestra.models.resolve import open_model
    from palaestra.registry import find_environment
    from palaestra.serve.agent_app import agent_app
    from palaestra.serve.remote_env import RemoteEnvironmentClient

    env: EnvironmentClient
    default_agent = "tool_calling"
    if options["env_url"]:
        remote = await RemoteEnvironmentClient.connect(options["env_url"], token=options["token"])
        default_agent, env = remote.default_agent, remote
    else:
        environment = find_environment(options["env_spec"]).environment()
        default_agent = environment.default_agent
        env = LocalEnvironmentClient(environment)
    model = open_model(options["model_spec"], api=options["api"], model_name=options["model_name"])
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

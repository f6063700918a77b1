"""``palaestra serve openenv ENV``: an environment in OpenEnv's protocol (``/ws``, ``/mcp``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from palaestra.cli.errors import exit_on_user_error
from palaestra.cli.serve.servers import host_option, port_option, read_token, token_options


@click.command("openenv")
@click.argument("env_spec")
@click.option(
    "--tasks",
    "tasks_path",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Tasks a reset picks from (by data.index or data.seed, else in turn). Default: the "
    "environment's example tasks, else tasks it generates from the seed.",
)
@host_option
@port_option
@token_options
def serve_openenv_command(
    env_spec: str,
    tasks_path: Path | None,
    host: str,
    port: int,
    token: str | None,
    token_file: Path | None,
) -> None:
    """Serve an environment to OpenEnv clients (reset/step/verify on /ws, MCP tools on /mcp).

    A step {"type": "verify"} ends the episode with the environment's reward. OpenEnv 0.3's
    clients send no bearer token: serve without one for them (on 127.0.0.1).
    """
    from palaestra._util.loop import run_on_fast_loop
    from palaestra.environment.client import LocalEnvironmentClient
    from palaestra.environment.registry import find_environment
    from palaestra.serve.evaluator import load_dataset
    from palaestra.serve.openenv_app import openenv_app, task_source

    with exit_on_user_error(Console(stderr=True)):
        token = read_token(token, token_file)
        entry = find_environment(env_spec)
        environment = entry.environment()
        app = openenv_app(
            LocalEnvironmentClient(environment),
            task_source(load_dataset(tasks_path or entry.example_tasks), environment),
            name=entry.name,
            description=entry.description,
            token=token,
        )
        label = f"environment {entry.name} (OpenEnv)"
        run_on_fast_loop(_serve(app, host=host, port=port, token=token, label=label))


async def _serve(app: Any, *, host: str, port: int, token: str | None, label: str) -> None:
    """Behind the token guard; the address announced as every palaestra server does."""
    from palaestra.http.announce import ready_line, serve_announced
    from palaestra.http.guard import Guard

    def on_ready(url: str) -> None:
        print(f"serving {label} on {url}", file=sys.stderr, flush=True)
        print(ready_line(url), flush=True)

    await serve_announced(
        Guard(app, token=token), host=host, port=port, on_ready=on_ready, ws="auto"
    )

"""``palaestra serve openenv ENV``: an environment in OpenEnv's protocol (``/ws``, ``/mcp``)."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console

from palaestra.cli.errors import exit_on_user_error
from palaestra.cli.options import env_arg_option, user_model_flags
from palaestra.cli.serve.servers import (
    host_option,
    port_option,
    served_env_spec,
    tasks_option,
    token_options,
)


@click.command("openenv")
@click.argument("env_name")
@env_arg_option
@tasks_option(
    "Tasks a reset picks from (by data.index or data.seed, else in turn). Default: the "
    "environment's example tasks, else tasks it generates from the seed."
)
@user_model_flags
@host_option
@port_option
@token_options
def serve_openenv_command(env_name: str, **options: Any) -> None:
    """Serve an environment to OpenEnv clients (reset/step/verify on /ws, MCP tools on /mcp).

    ENV_NAME is a name (see `palaestra envs`), ./file.py[:Class] or module:Class. A step
    {"type": "verify"} ends the episode with the environment's reward. OpenEnv 0.10's clients
    send a token with headers={"Authorization": "Bearer ..."}; OpenEnv 0.3's send none: serve
    without one for them (on 127.0.0.1).
    """
    from palaestra.serve.server import serve

    with exit_on_user_error(Console(stderr=True)):
        serve(served_env_spec("openenv", env_name, options))

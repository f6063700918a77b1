"""``palaestra serve mcp ENV``: an environment's tools for MCP clients (stdio or HTTP)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console

from palaestra.cli.errors import exit_on_user_error
from palaestra.cli.options import env_arg_option, env_spec
from palaestra.cli.serve.servers import host_option, port_option, read_token, token_options
from palaestra.errors import ConfigError


@click.command("mcp")
@click.argument("env_name", required=False)
@click.option("--env", "env_option", help="The environment (the same as ENV_NAME).")
@env_arg_option
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio: one client, which started this command; http: streamable HTTP at /mcp.",
)
@click.option(
    "--tasks",
    "tasks_path",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Tasks to seed each MCP session from. Default: the environment's example tasks.",
)
@click.option(
    "--task",
    "task_index",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="The index of the task each MCP session is seeded with.",
)
@host_option
@port_option
@token_options
def serve_mcp_command(env_name: str | None, **options: Any) -> None:
    """Serve an environment's tools over MCP (Model Context Protocol), to any MCP client.

    ENV_NAME is a name (see `palaestra envs`), ./file.py[:Class] or module:Class. Each MCP
    session has its own state (an environment session seeded with --task). With --transport
    http it listens on --host/--port (loopback by default) and prints its URL; --token
    makes it require a bearer token.
    """
    from palaestra._util.loop import run_on_fast_loop
    from palaestra.serve.mcp_app import serve_mcp

    console = Console(stderr=True)
    with exit_on_user_error(console):
        chosen = env_name or options["env_option"]
        if env_name and options["env_option"] and env_name != options["env_option"]:
            raise ConfigError("give the environment once: ENV_NAME or --env")
        if not chosen:
            raise ConfigError("name the environment to serve: palaestra serve mcp ENV_NAME")
        options["env_spec"] = chosen
        token = read_token(options["token"], options["token_file"])
        if token is not None and options["transport"] == "stdio":
            raise ConfigError("--token guards the HTTP transport; stdio has no requests to guard")
        try:
            run_on_fast_loop(
                serve_mcp(
                    env_spec(options),
                    tasks=options["tasks_path"],
                    task_index=options["task_index"],
                    transport=options["transport"],
                    host=options["host"],
                    port=options["port"],
                    token=token,
                )
            )
        except KeyboardInterrupt:
            console.print("stopped", highlight=False)

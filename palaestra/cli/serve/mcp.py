"""``palaestra serve mcp ENV``: an environment's tools for MCP clients (stdio or HTTP)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console

from palaestra.cli.errors import exit_on_user_error
from palaestra.cli.options import env_arg_option, env_spec
from palaestra.cli.serve.servers import (
    TOKEN_ENV,
    host_option,
    port_option,
    read_token,
    token_options,
)
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
@click.option(
    "--max-sessions",
    type=click.IntRange(min=0),
    help="HTTP: live MCP sessions at most. Opening one more ends the least recently used "
    "idle session (its client gets 404 and opens a new one); when all are busy it is "
    "answered 503 with Retry-After. 0 lifts the cap. Default: 64.",
)
@click.option(
    "--session-ttl",
    type=click.FloatRange(min=0, min_open=True),
    help="HTTP: seconds an MCP session may be idle (no request in flight) before it is "
    "ended and what it holds (its environment session, its machine) is freed. "
    "Default: 600.",
)
@click.option(
    "--max-boxes",
    type=click.IntRange(min=0),
    help="For an environment whose sessions each hold a machine (harbor:, the machine "
    "tools): sessions holding one at once; at the cap a new one takes the least recently "
    "used idle session's, or its call is refused while all are busy. 0 lifts the cap. "
    "Default: the number of CPUs.",
)
@host_option
@port_option
@token_options
@click.option(
    "--no-token",
    is_flag=True,
    help="HTTP: serve without a bearer token (anyone who can reach the port may run the "
    "tools). Without it, --transport http refuses to start with no token.",
)
def serve_mcp_command(env_name: str | None, **options: Any) -> None:
    """Serve an environment's tools over MCP (Model Context Protocol), to any MCP client.

    ENV_NAME is a name (see `palaestra envs`), ./file.py[:Class] or module:Class. Each MCP
    session has its own state (an environment session seeded with --task). With --transport
    http it listens on --host/--port (loopback by default), prints its URL, and requires a
    bearer token (PALAESTRA_SERVER_TOKEN, --token-file or --token; clients send
    `Authorization: Bearer <token>`) unless --no-token is given.
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
        if options["transport"] == "stdio":
            if token is not None or options["no_token"]:
                raise ConfigError(
                    "--token guards the HTTP transport; stdio has no requests to guard"
                )
        elif token is None and not options["no_token"]:
            raise ConfigError(
                f"serving MCP over HTTP needs a bearer token: set {TOKEN_ENV} or give "
                f"--token-file (clients send 'Authorization: Bearer <token>'), or give "
                f"--no-token to serve without one"
            )
        elif token is not None and options["no_token"]:
            raise ConfigError("give a token or --no-token, not both")
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
                    max_sessions=options["max_sessions"],
                    session_ttl=options["session_ttl"],
                    max_boxes=options["max_boxes"],
                )
            )
        except KeyboardInterrupt:
            console.print("stopped", highlight=False)

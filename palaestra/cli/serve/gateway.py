"""``palaestra serve gateway``: an OpenAI-compatible endpoint per rollout in front of a model."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from palaestra.cli.errors import exit_on_user_error
from palaestra.cli.options import model_config, model_flags
from palaestra.cli.serve.servers import (
    host_option,
    port_option,
    read_token,
    unix_socket_option,
    with_token_options,
)


@click.command("gateway")
@model_flags()
@host_option
@port_option
@unix_socket_option
@with_token_options(
    "The admin token (open rollouts, pause, resume, stats, metrics); without one a random "
    "token is made and printed at start."
)
@click.option("--model-id", help="The id listed by /v1/models. Default: the model's name.")
def serve_gateway_command(**options: Any) -> None:
    """Serve a model to third-party harnesses: one OpenAI-compatible base URL per rollout.

    Open a rollout with POST /admin/rollouts (the admin token as bearer token): it answers
    {id, base_url, api_key}; point the harness at base_url with api_key. Its calls (Chat
    Completions, Completions, Responses; streamed or not) are recorded: GET
    /admin/rollouts/<id> answers them and the rollout's trajectory, DELETE closes it.
    POST /admin/pause holds new calls and answers once the calls in flight are done;
    POST /admin/resume lets them go on.
    """
    from palaestra._util.loop import run_on_fast_loop
    from palaestra.collection.runtime import collector_gc, raise_open_files_limit
    from palaestra.serve.gateway import serve_gateway

    console = Console(stderr=True)
    with exit_on_user_error(console):
        token = read_token(options["token"], options["token_file"])
        made = token is None
        if token is None:
            token = secrets.token_urlsafe(24)
        socket: Path | None = options["unix_socket"]
        # A server's process-wide choices (``palaestra.serve.server``): every call in flight
        # holds two sockets here (the harness' and the model's), and rare young GCs.
        raise_open_files_limit()
        try:
            with collector_gc():
                run_on_fast_loop(
                    serve_gateway(
                        model_config(options),
                        admin_token=token,
                        host=options["host"],
                        port=options["port"],
                        unix_socket=socket.absolute() if socket is not None else None,
                        model_id=options["model_id"],
                        show_token=made,
                    )
                )
        except KeyboardInterrupt:
            console.print("stopped", highlight=False)

"""``palaestra serve ors ENV``: an environment in the Open Reward Standard (HTTP + SSE)."""

from __future__ import annotations

from pathlib import Path
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
from palaestra.errors import ConfigError


@click.command("ors")
@click.argument("env_name")
@env_arg_option
@tasks_option(
    "The tasks of the split 'test'. Default: the environment's example tasks, else 100 "
    "tasks it generates from seed 0."
)
@click.option(
    "--split",
    "split_files",
    multiple=True,
    metavar="NAME=FILE",
    help="A split and its task file (repeat for more; replaces the default split).",
)
@user_model_flags
@host_option
@port_option
@token_options
def serve_ors_command(env_name: str, **options: Any) -> None:
    """Serve an environment to Open Reward Standard clients (the openreward SDK).

    ENV_NAME is a name (see `palaestra envs`), ./file.py[:Class] or module:Class. Each tool
    call answers the tool's output; the terminal tool (the model's final answer) answers the
    environment's reward. A turn-based environment has one tool, `act`, whose every step
    answers its reward. With a token, the SDK's api_key (its X-API-Key header) may carry it.
    """
    from palaestra.serve.server import serve

    with exit_on_user_error(Console(stderr=True)):
        splits = split_files(options["split_files"])
        serve(served_env_spec("ors", env_name, options, splits=splits))


def split_files(given: tuple[str, ...]) -> dict[str, Path]:
    """``--split NAME=FILE`` options as names and files; a one-line ``ConfigError`` else."""
    splits: dict[str, Path] = {}
    for entry in given:
        name, sep, file = entry.partition("=")
        if not sep or not name or not file:
            raise ConfigError(f"--split {entry!r}: write NAME=FILE (e.g. --split test=tasks.jsonl)")
        if name in splits:
            raise ConfigError(f"--split {name!r} is given twice")
        path = Path(file)
        if not path.is_file():
            raise ConfigError(f"--split {name}: no task file at {path}")
        splits[name] = path
    return splits

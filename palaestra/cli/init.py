"""``palaestra init``: write a new environment package, ready to edit."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from palaestra.cli.errors import exit_on_user_error


@click.command("init")
@click.argument("name")
@click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path),
    help="Where to write the package (default: ./NAME); it must be new or empty.",
)
def init_command(name: str, directory: Path | None) -> None:
    """Write the package of a new environment NAME: one tool, a verifier, five example
    tasks, a README, tests and the entry point that makes `palaestra envs` list it."""
    from palaestra.authoring import init_environment

    with exit_on_user_error(Console(stderr=True)):
        scaffold = init_environment(name, directory)
    console = Console(highlight=False, soft_wrap=True)
    where = escape(str(scaffold.directory))
    console.print(f"wrote environment '{scaffold.module}' ({scaffold.class_name}) to {where}:")
    for path in scaffold.files:
        console.print(f"  {escape(str(path))}")
    console.print("next:")
    console.print(f"  palaestra test {escape(str(scaffold.environment_file))}")
    console.print(f"  cd {where} && pip install -e . && palaestra envs")

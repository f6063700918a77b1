"""The ``palaestra`` command."""

from __future__ import annotations

import click
from palaestra.cli.collect import collect_command
from palaestra.cli.envs import envs_command

from palaestra.cli.serve import serve_group


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="palaestra")
def cli() -> None:
    """Build RL environments for LLMs and collect verified rollouts from them."""


cli.add_command(collect_command)
cli.add_command(envs_command)
cli.add_command(serve_group)


def main() -> None:
    cli()

"""The ``palaestra`` command."""

from __future__ import annotations

import click

from palaestra.cli.collect import collect_command
from palaestra.cli.compare import compare_command
from palaestra.cli.envs import envs_command
from palaestra.cli.eval import eval_command
from palaestra.cli.export import export_command
from palaestra.cli.harbor import harbor_group
from palaestra.cli.init import init_command
from palaestra.cli.plugins import plugins_command
from palaestra.cli.report import report_command
from palaestra.cli.review import test_env_command
from palaestra.cli.run import run_command, status_command
from palaestra.cli.serve import serve_group
from palaestra.cli.serve.gateway import serve_gateway_command
from palaestra.cli.serve.mcp import serve_mcp_command
from palaestra.cli.serve.openenv import serve_openenv_command
from palaestra.cli.serve.ors import serve_ors_command
from palaestra.cli.serve.servers import (
    serve_agent_command,
    serve_env_command,
    serve_spec_command,
)
from palaestra.cli.tasks import tasks_command
from palaestra.cli.verify import verify_command
from palaestra.cli.view import view_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="palaestra")
def cli() -> None:
    """Build RL environments for LLMs and collect verified rollouts from them."""


cli.add_command(collect_command)
cli.add_command(compare_command)
cli.add_command(envs_command)
cli.add_command(eval_command)
cli.add_command(export_command)
cli.add_command(harbor_group)
cli.add_command(init_command)
cli.add_command(plugins_command)
cli.add_command(report_command)
serve_group.add_command(serve_env_command)
serve_group.add_command(serve_agent_command)
serve_group.add_command(serve_spec_command)
serve_group.add_command(serve_openenv_command)
serve_group.add_command(serve_ors_command)
serve_group.add_command(serve_mcp_command)
serve_group.add_command(serve_gateway_command)
cli.add_command(serve_group)
cli.add_command(run_command)
cli.add_command(status_command)
cli.add_command(verify_command)
cli.add_command(tasks_command)
cli.add_command(test_env_command)
cli.add_command(view_command)


def main() -> None:
    cli()

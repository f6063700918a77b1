"""``palaestra tasks``: an environment's tasks as NeMo Gym input JSONL (``export_tasks``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console

from palaestra.cli.errors import exit_on_user_error
from palaestra.cli.options import assignments, env_arg_option


@click.command("tasks")
@click.argument("env_name")
@env_arg_option
@click.option(
    "--num-tasks",
    type=click.IntRange(min=1),
    help="Generate N tasks with the environment's generator. Default: its example tasks.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the task generator.")
@click.option(
    "--agent-name",
    help="Name the agent in each row's agent_ref (NeMo Gym's collector sends a row there).",
)
@click.option(
    "--output",
    "output_path",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="The JSONL file to write (replaced whole).",
)
def tasks_command(env_name: str, **options: Any) -> None:
    """Write ENV's tasks as NeMo Gym input JSONL: for `collect --input`, NeMo Gym's
    ng_collect_rollouts, and NeMo Evaluator (gym://HOST:PORT?data=FILE against
    `palaestra serve env ENV --tasks FILE`).

    ENV_NAME is a name (see `palaestra envs`), ./file.py[:Class] or module:Class.
    """
    from palaestra.run.export import export_tasks

    console = Console(stderr=True)
    with exit_on_user_error(console):
        written = export_tasks(
            env_name,
            options["output_path"],
            num_tasks=options["num_tasks"],
            seed=options["seed"],
            env_args=assignments(options["env_args"], "--env-arg"),
            agent=options["agent_name"],
        )
    console.print(f"wrote {written} tasks to {options['output_path']}", highlight=False)

"""``palaestra tasks``: an environment's tasks as NeMo Gym input JSONL (``export_tasks``) or as
Harbor task folders (``--format harbor``, ``export_harbor``)."""

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
    "--format",
    "output_format",
    type=click.Choice(["nemo-gym", "harbor"]),
    default="nemo-gym",
    show_default=True,
    help="nemo-gym: one JSONL file. harbor: a directory of Harbor task folders (task.toml, "
    "instruction.md, environment/, tests/, solution/), for environments checkable from a file.",
)
@click.option(
    "--output",
    "output_path",
    type=click.Path(path_type=Path),
    help="The JSONL file to write (replaced whole), or with --format harbor a new directory.",
)
@click.option(
    "--summary",
    is_flag=True,
    help="Print a summary of the environment's task set instead (environments with a task "
    "catalogue: swe_local).",
)
@click.option(
    "--filter",
    "task_filter",
    help="Keep only the tasks this selects (environments with a task catalogue; swe_local: "
    "e.g. 'language=python,difficulty=medium|hard,clean').",
)
@click.option(
    "--split",
    help="Write the environment's named task split (e.g. smoke) instead of its example tasks.",
)
def tasks_command(env_name: str, **options: Any) -> None:
    """Write ENV's tasks as NeMo Gym input JSONL: for `collect --input`, NeMo Gym's
    ng_collect_rollouts, and NeMo Evaluator (gym://HOST:PORT?data=FILE against
    `palaestra serve env ENV --tasks FILE`).

    ENV_NAME is a name (see `palaestra envs`), ./file.py[:Class] or module:Class.
    """
    console = Console(stderr=True)
    task_filter = options["task_filter"]
    if options["split"] is not None and (options["summary"] or task_filter is not None):
        raise click.UsageError("--split names its tasks itself: not with --filter or --summary")
    if options["summary"] or task_filter is not None:
        from palaestra.environment.finding.registry import find_environment_class

        with exit_on_user_error(console):
            cls = find_environment_class(env_name)
            summarize = getattr(cls, "task_summary", None)
            if not callable(summarize):
                raise click.UsageError(
                    f"environment '{cls.name}' has no task catalogue: --summary and --filter "
                    "are for environments that have one (swe_local)"
                )
            if options["summary"]:
                click.echo(summarize(task_filter))
                return
            if options["output_format"] == "harbor" or options["num_tasks"] is not None:
                raise click.UsageError("--filter selects among the example tasks (nemo-gym)")
            selection = cls.example_tasks_file(task_filter)  # type: ignore[attr-defined]
    elif options["split"] is not None:
        from palaestra.environment.finding.registry import find_environment, task_split

        if options["output_format"] == "harbor" or options["num_tasks"] is not None:
            raise click.UsageError("--split writes the split's task file: not with --num-tasks")
        with exit_on_user_error(console):
            selection = task_split(find_environment(env_name).environment, options["split"])
    else:
        selection = None
    if options["output_path"] is None:
        raise click.UsageError("--output is needed (or --summary)")
    if options["output_format"] == "harbor":
        from palaestra.run.harbor_export import export_harbor

        if options["agent_name"] is not None:
            raise click.UsageError("--agent-name names a NeMo Gym agent: not with --format harbor")
        with exit_on_user_error(console):
            written = export_harbor(
                env_name,
                options["output_path"],
                num_tasks=options["num_tasks"],
                seed=options["seed"],
                env_args=assignments(options["env_args"], "--env-arg"),
            )
        console.print(
            f"wrote {written} Harbor task folders to {options['output_path']}", highlight=False
        )
        return
    from palaestra.run.export import export_tasks

    with exit_on_user_error(console):
        if options["output_path"].is_dir():
            raise click.UsageError(f"{options['output_path']} is a directory: --output is a file")
        written = export_tasks(
            env_name,
            options["output_path"],
            num_tasks=options["num_tasks"],
            seed=options["seed"],
            env_args=assignments(options["env_args"], "--env-arg"),
            agent=options["agent_name"],
            tasks=selection,
        )
    console.print(f"wrote {written} tasks to {options['output_path']}", highlight=False)

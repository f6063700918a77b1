"""``palaestra verify``: score stored rollouts again, offline, and report what changed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from palaestra.cli.errors import exit_on_user_error
from palaestra.cli.options import assignments, env_arg_option

if TYPE_CHECKING:
    from palaestra.run.reverify import ReverifySummary

SHOWN_CHANGES = 20


@click.command("verify")
@click.argument("rollouts", type=click.Path(path_type=Path))
@click.option("--env", "env_spec", required=True, help="The environment whose verifier to use.")
@env_arg_option
@click.option(
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the re-scored rows here (with previous_reward).",
)
@click.option(
    "--replay-tools/--no-replay-tools",
    default=True,
    show_default=True,
    help="Rebuild session state by replaying the trajectory's tool calls first.",
)
def verify_command(
    rollouts: Path,
    env_spec: str,
    env_args: tuple[str, ...],
    output: Path | None,
    replay_tools: bool,
) -> None:
    """Re-verify a rollouts file with an environment's verifier; no model is called.

    ROLLOUTS is a rollouts JSONL file, or ATIF trajectories (a .json file of one, or a
    directory of them): their scored rollouts are verified.
    """
    from palaestra.run.atif import readable_runs
    from palaestra.run.reverify import reverify_file
    from palaestra.spec import EnvSpec

    console = Console(stderr=True)
    with exit_on_user_error(console):
        env = EnvSpec(name=env_spec, args=assignments(env_args, "--env-arg"))
        with readable_runs([rollouts]) as (run,):
            work = reverify_file(env, run, output=output, replay_tools=replay_tools)
            summary = asyncio.run(work)
    if summary.torn_line is not None:
        console.print(
            f"[yellow]warning:[/] {escape(str(rollouts))}:{summary.torn_line}: the last line is "
            f"incomplete (a run killed while writing it?) and was not verified; the "
            f"{summary.rows} complete lines were",
            highlight=False,
            soft_wrap=True,
        )
    Console().print(_table(summary))


def _table(summary: ReverifySummary) -> Table:
    table = Table(
        title=f"re-verified {summary.rows} rollouts: {summary.unchanged} unchanged, "
        f"{summary.changed} changed",
        title_justify="left",
    )
    for column in ("task", "rollout", "stored reward", "new reward", "note"):
        table.add_column(column)
    for change in summary.changes[:SHOWN_CHANGES]:
        after = "failure" if change.after is None else f"{change.after:g}"
        table.add_row(
            str(change.task_index),
            str(change.rollout_index),
            f"{change.before:g}",
            after,
            change.reason,
        )
    if summary.changed > SHOWN_CHANGES:
        table.caption = f"... and {summary.changed - SHOWN_CHANGES} more"
    return table

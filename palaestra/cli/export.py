"""``palaestra export``: a run's rollouts in another program's format (ATIF trajectories)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from palaestra.cli.errors import exit_on_user_error


@click.command("export")
@click.argument("rollouts", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["atif"]),
    required=True,
    help="atif: one ATIF v1.7 trajectory (JSON) per rollout, scored or failed, as Harbor "
    "validates and views them.",
)
@click.option(
    "--output",
    "output_path",
    type=click.Path(path_type=Path, file_okay=False),
    required=True,
    help="The directory to write (new, or empty).",
)
def export_command(rollouts: Path, output_format: str, output_path: Path) -> None:
    """Write every rollout of ROLLOUTS (and of its _failures.jsonl) in another format.

    With --format atif each rollout is one file, OUTPUT/task<T>_rollout<R>.json (a failed
    one ..._failed.json): its steps, tool calls and observations, each model call's token ids
    and log-probs, and in its extra fields the reward (or the failure), the policy versions
    and who produced each item. `palaestra view`, `verify` and `report` read these files
    back, and nothing the rows had is lost.
    """
    from palaestra.run.atif import export_atif

    del output_format  # one format so far
    console = Console(stderr=True)
    with exit_on_user_error(console):
        written = export_atif(rollouts, output_path)
    for torn in written.torn_lines:
        console.print(
            f"[yellow]warning:[/] {escape(torn)}: the last line is incomplete (a run killed "
            "while writing it?) and was not exported",
            highlight=False,
            soft_wrap=True,
        )
    console.print(
        f"wrote {written.scored + written.failed} ATIF trajectories ({written.scored} scored, "
        f"{written.failed} failed) to {escape(str(written.directory))}",
        highlight=False,
        soft_wrap=True,
    )

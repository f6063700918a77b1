"""``palaestra test``: check an environment as a reviewer would, one line per check."""

from __future__ import annotations

from pathlib import Path

import click
import orjson
from rich.console import Console
from rich.markup import escape

from palaestra.cli.errors import EXIT_USER_ERROR, exit_on_user_error
from palaestra.cli.options import assignments, env_arg_option

STYLES = {"pass": "green", "fail": "red", "skip": "yellow"}


@click.command("test")
@click.argument("env")
@env_arg_option
@click.option(
    "--input",
    "tasks",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Tasks to check instead of the example tasks beside the environment.",
)
@click.option("--no-model", is_flag=True, help="Skip the smoke run (no model is loaded).")
@click.option(
    "--model",
    default="local",
    show_default=True,
    help="The smoke run's model: local (the embedded one), a base URL or a configured name.",
)
@click.option(
    "--user-model",
    help="The model playing an environment's simulated user in the oracle, null and smoke "
    "runs (the forms --model takes). Without it, an environment's scripted user plays where it "
    "has one (tau2: its gold user), and the oracle and null checks of any other user that "
    "needs a model are skipped.",
)
@click.option(
    "--smoke-tasks",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Example tasks the smoke run collects.",
)
@click.option(
    "--cheat-sample",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Example tasks per category a machine environment's adversarial sweep runs every "
    "cheat on (0: skip the sweep).",
)
@click.option(
    "--sample",
    type=click.IntRange(min=1),
    help="Check only N of the example tasks, drawn with --seed (all but the smoke run).",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="The seed that draws --sample."
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def test_env_command(
    env: str,
    env_args: tuple[str, ...],
    tasks: Path | None,
    no_model: bool,
    model: str,
    user_model: str | None,
    smoke_tasks: int,
    cheat_sample: int,
    sample: int | None,
    seed: int,
    as_json: bool,
) -> None:
    """Check the environment ENV (a name, ./file.py[:Class] or module:Class): tool schemas
    and docs, example tasks, golden answers, the oracle and null agents (tasks with gold
    actions), the cheats of the adversarial sweep (machine environments), and a smoke
    collection with a real model. Exits 1 when a check fails."""
    from palaestra.authoring import SmokeOptions, check_environment

    errors = Console(stderr=True)
    with exit_on_user_error(errors):
        smoke = None if no_model else SmokeOptions(tasks=smoke_tasks, model=model)
        report = check_environment(
            env,
            env_args=assignments(env_args, "--env-arg"),
            tasks=tasks,
            smoke=smoke,
            user_model=user_model,
            cheat_sample=cheat_sample,
            sample=sample,
            seed=seed,
        )
    if as_json:
        click.echo(orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2).decode())
    else:
        console = Console(highlight=False, soft_wrap=True)
        console.print(f"{escape(report.environment)} ({escape(report.source)})")
        for check in report.checks:
            style = STYLES[str(check.status)]
            console.print(
                f"  [{style}]{str(check.status).upper():4}[/] {check.name}: {escape(check.reason)}"
            )
            for line in check.details.get("results", []):  # oracle, null, cheats: per task
                console.print(f"         {escape(line)}")
        failed, skipped = len(report.failures), sum(c.status == "skip" for c in report.checks)
        verdict = "[red]failed[/]" if failed else "[green]passed[/]"
        console.print(f"{verdict}: {len(report.checks)} checks, {failed} failed, {skipped} skipped")
    if not report.ok:
        raise SystemExit(EXIT_USER_ERROR)

"""``palaestra eval``: environments + model + repeats -> a run each, then one report.

A thin shell over ``palaestra.eval`` (``palaestra.run.eval``): the flags become its
arguments; what is left here is how a terminal shows it (a progress bar per environment, the
figures of each and overall with their intervals, where the report went) and the exit status.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from palaestra.cli.errors import EXIT_NOTHING_SCORED, EXIT_STOPPED, exit_on_user_error
from palaestra.cli.options import (
    agent_spec,
    assignments,
    metrics_port_option,
    run_fields,
    run_flags,
    sampling_of,
    user_model_config,
)
from palaestra.cli.options import model_config as model_config_of
from palaestra.errors import ConfigError

if TYPE_CHECKING:
    from palaestra.cli.progress import RichProgress
    from palaestra.collection.collector import RunSummary
    from palaestra.evaluate.figures import RunFigures
    from palaestra.run.eval import Evaluation


@click.command("eval")
@click.option(
    "--env",
    "envs",
    multiple=True,
    required=True,
    help="An environment to evaluate (repeatable): a name (see `palaestra envs`), "
    "./file.py[:Class] or module:Class.",
)
@click.option(
    "--env-arg",
    "env_args",
    multiple=True,
    metavar="NAME:KEY=VALUE",
    help="A keyword argument of the constructor of the environment given as --env NAME "
    "(NAME exactly as given; repeatable), e.g. --env-arg ./maze.py:size=5; with one --env, "
    "KEY=VALUE is enough. The value is a YAML scalar (a number, true/false, null, else text).",
)
@run_flags
@click.option(
    "--output-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("runs/eval"),
    show_default=True,
    help="Where each environment's run (<env>.jsonl and its sidecars) and report.md / "
    "report.html go.",
)
@metrics_port_option(
    "Serve Prometheus metrics on http://127.0.0.1:PORT/metrics while the evaluation runs: the "
    "environment running now serves its run's metrics there (they run one after the other), "
    "so the counters start at 0 with each environment and the port is closed for a moment "
    "between two."
)
@click.option("--json", "as_json", is_flag=True, help="Print the evaluation's figures as JSON.")
def eval_command(**options: Any) -> None:
    """Evaluate a model on environments: collect each, then a report with intervals.

    Each environment is one `palaestra collect` run into OUTPUT_DIR/<env>.jsonl, one after
    the other; then OUTPUT_DIR/report.md and report.html show each environment's figures and
    the overall ones (every environment's tasks pooled, each task weighing the same), each
    with n, failures and a 95% interval.

    Exit status: 0 done; 1 a user error (nothing ran); 3 stopped early, resumable (a service
    unreachable, the API key rejected, disk full); 4 nothing this invocation attempted was
    scored; 130 Ctrl-C; 143 SIGTERM (both resumable with --resume).
    """
    import orjson

    from palaestra.cli.progress import RichProgress
    from palaestra.collection.runtime import run_collector
    from palaestra.run.eval import plan, run_plan

    console = Console(stderr=True)
    with exit_on_user_error(console):
        envs = list(options["envs"])
        env_args = env_args_of(options["env_args"], envs)
        planned = plan(
            envs,
            output_dir=options["output_dir"],
            model=model_config_of(options, sampling=sampling_of(options)),
            user_model=user_model_config(options),
            agent=agent_spec(options),
            env_args=env_args,
            **run_fields(options),
        )

        def progress_for(name: str) -> Headed:
            return Headed(name, RichProgress(console), console)

        started = time.perf_counter()
        result = run_collector(run_plan(planned, progress_for))
        elapsed = time.perf_counter() - started
    if options["as_json"]:
        click.echo(orjson.dumps(result.to_json(), option=orjson.OPT_INDENT_2).decode())
    else:
        show(result, Console(), elapsed)
    if result.stopped_reason:
        console.print(
            f"[red]stopped:[/] {escape(result.stopped_reason)}; run the same command with "
            "--resume to continue",
            highlight=False,
        )
        raise SystemExit(EXIT_STOPPED)
    if result.nothing_scored:
        console.print(
            "[red]nothing was scored:[/] every rollout of this evaluation failed (see the "
            "report's failures)",
            highlight=False,
        )
        raise SystemExit(EXIT_NOTHING_SCORED)


class Headed:
    """An environment's progress bar under its name, the name shown when its run starts: a
    run refused before it starts (another run's files, a Ray cluster out of reach) shows only
    its one error line."""

    def __init__(self, name: str, progress: RichProgress, console: Console) -> None:
        self.name, self.progress, self.console = name, progress, console

    def start(self, summary: RunSummary) -> None:
        self.console.print(f"[bold]{escape(self.name)}[/]", highlight=False)
        self.progress.start(summary)

    def update(self, summary: RunSummary) -> None:
        self.progress.update(summary)

    def message(self, text: str) -> None:
        self.progress.message(text)

    def note(self, text: str) -> None:
        self.progress.note(text)

    def stop(self) -> None:
        self.progress.stop()


def env_args_of(items: Sequence[str], envs: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``--env-arg NAME:KEY=VALUE`` flags as each environment's arguments, keyed by its --env
    as given; a bare ``KEY=VALUE`` is the one environment's. The values are read as
    ``collect`` reads them (``assignments``: YAML scalars). A NAME that is no --env, or a bare
    ``KEY=VALUE`` beside several, is one ``ConfigError`` naming the flag."""
    given: dict[str, list[str]] = {}
    for item in items:
        head, equals, value = item.partition("=")
        name, colon, key = head.rpartition(":")
        if not equals or not key.strip():
            raise ConfigError(f"--env-arg {item!r}: expected NAME:KEY=VALUE (or KEY=VALUE)")
        if not colon:
            if len(envs) > 1:
                raise ConfigError(
                    f"--env-arg {item!r}: {len(envs)} --env are given ({', '.join(envs)}); "
                    f"say whose argument it is, e.g. --env-arg {envs[0]}:{item}"
                )
            name = envs[0]
        elif name not in envs:
            raise ConfigError(
                f"--env-arg {item!r}: {name!r} is not one of the --env values "
                f"({', '.join(envs)}); give NAME exactly as --env gives it"
            )
        given.setdefault(name, []).append(f"{key}={value}")
    return {name: assignments(pairs, "--env-arg") for name, pairs in given.items()}


def show(result: Evaluation, console: Console, elapsed: float) -> None:
    """Each environment's reward figures and the overall ones, with intervals, and the report.

    One line a figure (``Figure.describe``: value [95% interval] n=tasks/rollouts, failed),
    environment after environment, so the table stays narrow whatever the figures.
    """
    rows: list[tuple[str, RunFigures]] = [
        (env.name, env.figures) for env in result.environments if env.figures is not None
    ]
    if len(rows) > 1 and result.overall is not None:
        rows.append(("overall", result.overall))
    table = Table(title="palaestra eval", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("environment", "figure", "value [95% interval]  n, failures"):
        table.add_column(column, no_wrap=column != "value [95% interval]  n, failures")
    for name, figures in rows:
        shown = [f for f in figures.figures if f.reading != "scored rollouts only"]
        for number, figure in enumerate(shown):
            text = figure.describe(3)
            if figure.value is not None and figure.interval is None:
                text = text.replace("  n=", " [-]  n=", 1)  # one task: no interval
            table.add_row(
                escape(name) if number == 0 else "",
                escape(figure.name),
                escape(text),
                style="bold" if name == "overall" else None,
                end_section=number == len(shown) - 1,
            )
    console.print(table)
    reading = "failures read as 0" if result.failures_as_zero else "failures left out"
    legend = f"[95% interval] over tasks ([-]: one task, no interval); {reading}"
    if len(rows) > 2:
        legend += "; overall: every environment's tasks pooled, each task weighing the same"
    console.print(legend, style="dim", highlight=False)
    console.print(f"{elapsed:.1f} s", style="dim", highlight=False)
    if result.report is not None:
        console.print(f"report: {escape(str(result.report.markdown))}", highlight=False)
        console.print(f"        {escape(str(result.report.html))}", highlight=False)

"""``palaestra collect``: verified rollouts of an environment's tasks, to JSONL.

A thin shell over ``palaestra.collect``: the flags become a ``RunSpec``; the library does the
rest. What is left here is how a terminal shows it (progress bar, summary, exit status).
"""

from __future__ import annotations

import time
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console

from palaestra.cli.errors import EXIT_NOTHING_SCORED, EXIT_STOPPED, exit_on_user_error
from palaestra.cli.options import (
    agent_spec,
    env_options,
    env_spec,
    metrics_port_option,
    run_fields,
    run_flags,
    sampling_of,
    user_model_config,
)
from palaestra.cli.options import model_config as model_config_of

if TYPE_CHECKING:
    from palaestra.collection.collector import RunSummary
    from palaestra.spec import AgentSpec, RunSpec

# The collector and the spec's pydantic models load when the command runs, not at start-up.


@click.command("collect")
@env_options(managed=True)
@click.option("--agent-url", help="A running agent server: each task is sent to its /run.")
@click.option(
    "--server-token",
    envvar="PALAESTRA_SERVER_TOKEN",
    show_envvar=True,
    help="Bearer token for --env-url / --agent-url servers.",
)
@click.option(
    "--input",
    "input_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Tasks JSONL: a regular file (it is read more than once, and again by --resume; "
    "not '-'). Default: the environment's example tasks.",
)
@click.option(
    "--split",
    help="Run the environment's named task split instead of its example tasks (smoke: a few "
    "of the suite's easiest tasks, on which the embedded model can score; docs/collecting.md).",
)
@click.option(
    "--output",
    "output_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Rollouts JSONL. Default: runs/<env>.jsonl.",
)
@run_flags
@click.option(
    "--report",
    is_flag=True,
    help="At the end, write the run's report beside the output: <output>_report.md and a "
    "self-contained <output>_report.html (as `palaestra report` does).",
)
@metrics_port_option()
def collect_command(**options: Any) -> None:
    """Collect verified rollouts: one scored rollout per line, failures in a sidecar.

    Exit status: 0 done; 1 a user error (nothing ran); 3 stopped early, resumable (a service
    unreachable, the API key rejected, disk full); 4 nothing this run attempted was scored;
    130 Ctrl-C; 143 SIGTERM (both resumable).
    """
    from palaestra.cli.progress import summary_table
    from palaestra.collection.runtime import run_collector

    console = Console(stderr=True)
    with exit_on_user_error(console):
        spec = run_spec_of(options)  # the metrics URL is shown once its port is bound
        summary, elapsed = run_collector(_timed(spec, console))
    reading = spec.collection.failures_as_zero
    Console().print(summary_table(summary, elapsed, failures_as_zero=reading))
    if spec.collection.report and summary.files is not None:
        from palaestra.cli.report import show_written

        show_written(summary.files.report_markdown, summary.files.report_html, Console())
    if summary.stopped_reason:
        raise SystemExit(EXIT_STOPPED)
    if summary.done == 0 and summary.failed:
        console.print(
            "[red]nothing was scored:[/] every rollout of this run failed (reasons above)",
            highlight=False,
        )
        raise SystemExit(EXIT_NOTHING_SCORED)


def run_spec_of(options: dict[str, Any]) -> RunSpec:
    """The ``RunSpec`` the flags describe."""
    from palaestra.spec import AgentSpec, CollectOptions, RunSpec

    token = options["server_token"]
    agent = agent_spec(options)
    if options["agent_url"]:
        agent = AgentSpec(url=options["agent_url"], token=token, **_only_named(agent))
    return RunSpec(
        env=env_spec(options, token),
        model=model_config_of(options, sampling=sampling_of(options)),
        user_model=user_model_config(options),
        agent=agent,
        collection=CollectOptions(
            input=options["input_path"],
            split=options["split"],
            output=options["output_path"],
            report=options["report"],
            **run_fields(options),
        ),
    )


def _only_named(agent: AgentSpec) -> dict[str, Any]:
    """An agent named or configured beside --agent-url: kept, so the library refuses it."""
    return {"name": agent.name, "options": agent.options}


def _timed(spec: RunSpec, console: Console) -> Coroutine[Any, Any, tuple[RunSummary, float]]:
    from palaestra.cli.progress import RichProgress
    from palaestra.run.collect import collect_async

    async def run() -> tuple[RunSummary, float]:
        started = time.perf_counter()
        summary = await collect_async(spec, progress=RichProgress(console))
        return summary, time.perf_counter() - started

    return run()

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
    agent_flags,
    agent_spec,
    env_options,
    env_spec,
    hosted_tools_flag,
    metrics_port_option,
    model_flags,
    scale_fields,
    scale_flags,
    user_model_config,
    user_model_flags,
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
@model_flags()
@user_model_flags
@agent_flags
@click.option(
    "--repeats",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Rollouts per task (rollout_index 0..N-1).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    help="Rollouts in flight at once; also bounds what is resident in memory. "
    "Default: 16, or 1 for the local model (it answers one request at a time, "
    "and one rollout at a time keeps its prompt cache warm).",
)
@click.option("--limit", type=click.IntRange(min=1), help="Use only the first N tasks.")
@click.option(
    "--num-tasks",
    type=click.IntRange(min=1),
    help="Generate N tasks with the environment's generator instead of --input.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the task generator.")
@click.option(
    "--resume",
    is_flag=True,
    help="Continue a killed run: skip finished rollouts. Refused unless it is the same run "
    "(env and its args, input content, repeats, agent and its options, model, sampling: see "
    "<output>_run.json).",
)
@click.option("--overwrite", is_flag=True, help="Delete an earlier run's files and start over.")
@click.option(
    "--failures-as-zero",
    is_flag=True,
    help="Read failed rollouts as reward 0 in the figures shown at the end (default: left out).",
)
@click.option(
    "--report",
    is_flag=True,
    help="At the end, write the run's report beside the output: <output>_report.md and a "
    "self-contained <output>_report.html (as `palaestra report` does).",
)
@hosted_tools_flag
@metrics_port_option()
@scale_flags
@click.option("--temperature", type=float, help="Override the tasks' temperature.")
@click.option("--top-p", type=float, help="Override the tasks' top_p.")
@click.option(
    "--max-output-tokens", type=click.IntRange(min=1), help="Override the tasks' max_output_tokens."
)
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
    sampling = {
        field: options[field]
        for field in ("temperature", "top_p", "max_output_tokens")
        if options[field] is not None
    }
    agent = agent_spec(options)
    if options["agent_url"]:
        agent = AgentSpec(url=options["agent_url"], token=token, **_only_named(agent))
    return RunSpec(
        env=env_spec(options, token),
        model=model_config_of(options, sampling=sampling),
        user_model=user_model_config(options),
        agent=agent,
        collection=CollectOptions(
            input=options["input_path"],
            split=options["split"],
            output=options["output_path"],
            repeats=options["repeats"],
            concurrency=options["concurrency"],
            limit=options["limit"],
            num_tasks=options["num_tasks"],
            seed=options["seed"],
            resume=options["resume"],
            overwrite=options["overwrite"],
            failures_as_zero=options["failures_as_zero"],
            report=options["report"],
            hosted_tools=options["hosted_tools"],
            **scale_fields(options),
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

"""``palaestra collect``: verified rollouts of an environment's tasks, to JSONL."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from palaestra.agents import AGENT_NAMES, BoundAgent, RolloutRunner, make_agent
from palaestra.cli.errors import (
    EXIT_NOTHING_SCORED,
    EXIT_STOPPED,
    exit_on_user_error,
)
from palaestra.collection.collector import CollectConfig, RunSummary, collect
from palaestra.collection.generated import write_generated_tasks
from palaestra.collection.progress import RichProgress, summary_table
from palaestra.collection.runtime import run_collector
from palaestra.collection.tasks import check_input_file
from palaestra.env_client import EnvironmentClient, LocalEnvironmentClient
from palaestra.environment import Environment
from palaestra.errors import ConfigError
from palaestra.registry import EnvironmentEntry, find_environment
from palaestra.types import JsonDict


@click.command("collect")
@click.option(
    "--env",
    "env_spec",
    help="Environment: a name (see `palaestra envs`), ./file.py[:Class] or module:Class.",
)
@click.option("--env-url", help="A running environment server (NeMo Gym protocol) instead.")
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
    "--output",
    "output_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Rollouts JSONL. Default: runs/<env>.jsonl.",
)
@click.option(
    "--model",
    "model_spec",
    default="local",
    show_default=True,
    help="'local' (embedded SmolLM2), an OpenAI-compatible base URL "
    "(http://host:8000/v1) or a name from --model-config.",
)
@click.option("--model-name", help="The `model` field sent to a remote endpoint.")
@click.option(
    "--api",
    type=click.Choice(["auto", "responses", "chat"]),
    default="auto",
    show_default=True,
    help="Remote API: Responses, Chat Completions, or detect.",
)
@click.option(
    "--api-key",
    envvar="OPENAI_API_KEY",
    show_envvar=True,
    help="Bearer token for the model endpoint. Never written to any output.",
)
@click.option(
    "--model-config",
    type=click.Path(path_type=Path, dir_okay=False),
    help="YAML file of named models (default ./palaestra_models.yaml).",
)
@click.option(
    "--agent",
    "agent_name",
    type=click.Choice(AGENT_NAMES),
    help="The harness. Default: the environment's own (tool_calling, or step for turn-based "
    "environments).",
)
@click.option(
    "--max-steps",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Most model calls per rollout (tool_calling and step agents). A rollout that runs "
    "out is still scored, and marked `_palaestra.truncated: max_steps`.",
)
@click.option(
    "--max-calls-per-turn",
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Most function calls executed per model answer (tool_calling agent); the rest "
    "are answered with an error output.",
)
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
    "(env, input content, repeats, agent, model, sampling: see <output>_run.json).",
)
@click.option("--overwrite", is_flag=True, help="Delete an earlier run's files and start over.")
@click.option("--temperature", type=float, help="Override the tasks' temperature.")
@click.option("--top-p", type=float, help="Override the tasks' top_p.")
@click.option(
    "--max-output-tokens", type=click.IntRange(min=1), help="Override the tasks' max_output_tokens."
)
@click.option(
    "--max-retries",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    help="Retries per model request on 429/5xx/disconnects.",
)
@click.option(
    "--request-timeout",
    type=click.FloatRange(min=0.1),
    default=600.0,
    show_default=True,
    help="Seconds to wait for one model answer.",
)
def collect_command(**options: Any) -> None:
    """Collect verified rollouts: one scored rollout per line, failures in a sidecar.

    Exit status: 0 done; 1 a user error (nothing ran); 3 stopped early, resumable (a service
    unreachable, the API key rejected, disk full); 4 nothing this run attempted was scored;
    130 Ctrl-C; 143 SIGTERM (both resumable).
    """
    console = Console(stderr=True)
    with exit_on_user_error(console):
        summary, elapsed = run_collector(_collect(options, console))
    Console().print(summary_table(summary, elapsed))
    if summary.stopped_reason:
        raise SystemExit(EXIT_STOPPED)
    if summary.done == 0 and summary.failed:
        console.print(
            "[red]nothing was scored:[/] every rollout of this run failed (reasons above)",
            highlight=False,
        )
        raise SystemExit(EXIT_NOTHING_SCORED)


async def _collect(options: dict[str, Any], console: Console) -> tuple[RunSummary, float]:
    entry = find_environment(options["env_spec"]) if options["env_spec"] else None
    if entry is None and not (options["env_url"] or options["agent_url"]):
        raise ConfigError("name an environment: --env NAME, --env-url URL or --agent-url URL")
    environment = entry.environment() if entry else None
    label = entry.name if entry else "remote"
    output = options["output_path"] or Path("runs") / f"{label}.jsonl"
    input_path = _input_path(options, entry, environment, output)
    async with contextlib.AsyncExitStack() as stack:
        runner, agent_name = await _runner(options, environment, stack)
        env_identity = entry.name if entry else options["env_url"]
        config = CollectConfig(
            input=input_path,
            output=output,
            repeats=options["repeats"],
            concurrency=options["concurrency"] or _default_concurrency(options),
            limit=options["limit"],
            resume=options["resume"],
            overwrite=options["overwrite"],
            overrides=_overrides(options),
            agent_ref={"type": "responses_api_agents", "name": f"{label}_{agent_name}"},
            run_facts=_run_facts(options, env_identity, agent_name),
        )
        started = time.perf_counter()
        summary = await collect(runner, config, RichProgress(console))
        return summary, time.perf_counter() - started


def _input_path(
    options: dict[str, Any],
    entry: EnvironmentEntry | None,
    environment: Environment | None,
    output: Path,
) -> Path:
    """The tasks to run: --input, generated tasks (--num-tasks), or the example tasks."""
    if options["num_tasks"] is not None:
        if options["input_path"] or environment is None:
            raise ConfigError(
                "--num-tasks generates tasks from --env; it cannot be combined "
                "with --input or a remote environment"
            )
        return write_generated_tasks(
            environment,
            count=options["num_tasks"],
            seed=options["seed"],
            path=output.with_name(f"{output.stem}_tasks.jsonl"),
        )
    input_path = options["input_path"] or (entry.example_tasks if entry else None)
    if input_path is None:
        raise ConfigError("pass --input: there are no example tasks to fall back on")
    check_input_file(Path(input_path))
    return Path(input_path)


async def _runner(
    options: dict[str, Any], environment: Environment | None, stack: contextlib.AsyncExitStack
) -> tuple[RolloutRunner, str]:
    """What runs each rollout: a served agent, or an agent here with a local or remote env."""
    if options["agent_url"]:
        from palaestra.remote.agent import RemoteAgent

        remote = RemoteAgent(options["agent_url"], token=options["server_token"])
        stack.push_async_callback(remote.aclose)
        return remote, "remote_agent"
    from palaestra.models.http import RetryPolicy, Timeouts
    from palaestra.models.resolve import open_model

    env: EnvironmentClient
    if options["env_url"]:
        from palaestra.remote.env import RemoteEnvironmentClient

        served = await RemoteEnvironmentClient.connect(
            options["env_url"], token=options["server_token"]
        )
        default, env = served.default_agent, served
    else:
        assert environment is not None
        default, env = environment.default_agent, LocalEnvironmentClient(environment)
    stack.push_async_callback(env.aclose)
    model = open_model(
        options["model_spec"],
        api=options["api"],
        model_name=options["model_name"],
        api_key=options["api_key"],
        config_path=options["model_config"],
        retry=RetryPolicy(max_retries=options["max_retries"]),
        timeouts=Timeouts(read=options["request_timeout"]),
    )
    stack.push_async_callback(model.aclose)
    agent = make_agent(
        options["agent_name"] or default,
        max_steps=options["max_steps"],
        max_calls_per_turn=options["max_calls_per_turn"],
    )
    return BoundAgent(agent, env, model), agent.name


def _run_facts(options: dict[str, Any], env: str | None, agent_name: str) -> JsonDict:
    """The run's identity as the command knows it (no secret: never the API key)."""
    if options["agent_url"]:
        return {"env": env, "agent": {"url": options["agent_url"]}}
    return {
        "env": env,
        "agent": {
            "name": agent_name,
            "max_steps": options["max_steps"],
            "max_calls_per_turn": options["max_calls_per_turn"],
        },
        "model": {"spec": options["model_spec"], "name": options["model_name"]},
    }


def _default_concurrency(options: dict[str, Any]) -> int:
    local = options["model_spec"] == "local" and not options["agent_url"]
    return 1 if local else 16


def _overrides(options: dict[str, Any]) -> JsonDict:
    names = {
        "temperature": "temperature",
        "top_p": "top_p",
        "max_output_tokens": "max_output_tokens",
    }
    return {
        field: options[option] for option, field in names.items() if options[option] is not None
    }

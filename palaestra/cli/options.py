"""The flags several commands share, and how they become parts of the run specification.

``collect``, ``serve agent`` and ``serve model`` take the same model flags; ``collect``,
``serve env`` and ``serve agent`` the same environment flags; ``collect`` and ``serve agent``
the same agent flags; ``collect`` and ``eval`` the same scale flags (workers, executor, Ray
address, metrics port). Parsing only: what a spec means is the business of
``palaestra.collection.assembly``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from palaestra.errors import ConfigError

if TYPE_CHECKING:
    from palaestra.spec import AgentSpec, EnvSpec, ModelConfig

# palaestra.spec (pydantic model building) and yaml, both slow to import, load when a command
# runs, not when the CLI starts: `palaestra --help` and `palaestra envs` need neither.

F = TypeVar("F", bound=Callable[..., Any])


def _stacked(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    def apply(command: F) -> F:
        for decorator in reversed(decorators):
            command = decorator(command)
        return command

    return apply


def assignments(values: Iterable[str], flag: str) -> dict[str, Any]:
    """``KEY=VALUE`` flags as a mapping, each value read as a YAML scalar: ``4`` is a number,
    ``true`` a boolean, ``null`` None, and anything else (``echo: ``, ``[a, b]`` too) the
    string as written. Lists and mappings go in a stack file or in Python."""
    found: dict[str, Any] = {}
    for item in values:
        key, separator, raw = item.partition("=")
        if not separator or not key.strip():
            raise ConfigError(f"{flag} {item!r}: expected KEY=VALUE")
        found[key.strip()] = _scalar(raw)
    return found


def _scalar(raw: str) -> Any:
    if not raw.strip():
        return raw
    import yaml

    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw
    return value if isinstance(value, str | int | float | bool) or value is None else raw


env_arg_option = click.option(
    "--env-arg",
    "env_args",
    multiple=True,
    metavar="KEY=VALUE",
    help="A keyword argument of the environment's constructor (repeatable), e.g. --env-arg "
    "difficulty=3; the value becomes the parameter's type: a,b,c for a list, true/false, a "
    "number, JSON for a mapping, else the text.",
)


def env_options(*, managed: bool = False) -> Callable[[F], F]:
    """``--env``, ``--env-arg KEY=VALUE`` and ``--env-url`` (and ``--env-cmd`` if ``managed``:
    a command that collects starts its own environment server)."""
    options = [
        click.option(
            "--env",
            "env_spec",
            help="Environment: a name (see `palaestra envs`), ./file.py[:Class] or module:Class.",
        ),
        env_arg_option,
        click.option("--env-url", help="A running environment server (NeMo Gym protocol)."),
    ]
    if managed:
        options.append(
            click.option(
                "--env-cmd",
                metavar="COMMAND",
                help="Start the environment server with this shell command, wait until it is "
                "healthy, and stop it (its whole process group) when the run ends, however it "
                "ends. It listens on the free port put in {port} and $PORT, or at --env-url if "
                "given. Its output goes to <output>_env_server.log.",
            )
        )
        options.append(
            click.option(
                "--env-cmd-timeout",
                type=click.FloatRange(min=0, min_open=True),
                metavar="SECONDS",
                help="Seconds to wait for the --env-cmd server to become healthy (default "
                "120); a command that exits ends the wait at once, with its last lines.",
            )
        )
    return _stacked(*options)


def env_spec(options: Mapping[str, Any], token: str | None = None) -> EnvSpec:
    from palaestra.spec import EnvSpec

    args = assignments(options.get("env_args", ()), "--env-arg")
    served = options.get("env_url") or options.get("env_cmd")
    if served and (options.get("env_spec") or args):
        raise ConfigError("give --env (with its --env-arg) or --env-url/--env-cmd, not both")
    return EnvSpec(
        name=options.get("env_spec"),
        args=args,
        url=options.get("env_url"),
        cmd=options.get("env_cmd"),
        cmd_timeout=options.get("env_cmd_timeout"),
        token=token,
    )


agent_flags = _stacked(
    click.option(
        "--agent",
        "agent_name",
        help="The harness: tool_calling, single_turn, step, or a plug-in's (see `palaestra "
        "plugins`). Default: the environment's own (tool_calling, or step for turn-based "
        "environments).",
    ),
    click.option(
        "--max-steps",
        type=click.IntRange(min=1),
        help="Most model calls per rollout (tool_calling and step agents; default 8). A "
        "rollout that runs out is still scored, and marked `_palaestra.truncated: max_steps`.",
    ),
    click.option(
        "--max-calls-per-turn",
        type=click.IntRange(min=1),
        help="Most function calls executed per model answer (tool_calling agent; default 64); "
        "the rest are answered with an error output.",
    ),
    click.option(
        "--max-user-turns",
        type=click.IntRange(min=0),
        help="Most messages a simulated user adds to a rollout (tool_calling agent, "
        "environments with a user; default 30). A conversation cut there is still scored, "
        "and marked `_palaestra.truncated: max_user_turns`.",
    ),
    click.option(
        "--agent-arg",
        "agent_args",
        multiple=True,
        metavar="KEY=VALUE",
        help="An option of the agent (its constructor's keyword argument; repeatable), the "
        "value a YAML scalar.",
    ),
)


def agent_spec(options: Mapping[str, Any]) -> AgentSpec:
    from palaestra.spec import AgentSpec

    given = assignments(options.get("agent_args", ()), "--agent-arg")
    for flag in ("max_steps", "max_calls_per_turn", "max_user_turns"):
        if options.get(flag) is not None:
            given[flag] = options[flag]
    return AgentSpec(name=options.get("agent_name"), options=given)


def model_flags(default: str | None = "local") -> Callable[[F], F]:
    """The model flags of ``collect``, ``serve agent`` and ``serve model``."""
    return _stacked(
        click.option(
            "--model",
            "model_spec",
            multiple=True,
            default=(default,) if default is not None else (),
            show_default=default is not None,
            help="'local' (embedded SmolLM2), an OpenAI-compatible base URL "
            "(http://host:8000/v1), a name from --model-config, or a model backend's name. "
            "Repeat it with the base URLs of several replicas of one model: a load-aware pool "
            "that keeps each rollout on one endpoint.",
        ),
        click.option("--model-name", help="The `model` field sent to a remote endpoint."),
        click.option(
            "--api",
            type=click.Choice(["auto", "responses", "chat"]),
            help="Remote API: Responses, Chat Completions, or detect (auto, the default).",
        ),
        click.option(
            "--api-key",
            envvar="OPENAI_API_KEY",
            show_envvar=True,
            help="Bearer token for the model endpoint. Never written to any output (prefer the "
            "variable: argv is visible in ps).",
        ),
        click.option(
            "--api-key-env",
            metavar="VARIABLE",
            help="Read the model endpoint's key from this environment variable instead "
            "(it wins over OPENAI_API_KEY).",
        ),
        click.option(
            "--model-config",
            type=click.Path(path_type=Path, dir_okay=False),
            help="YAML file of named models (default ./palaestra_models.yaml).",
        ),
        click.option(
            "--max-retries",
            type=click.IntRange(min=0),
            help="Retries per model request on 429/5xx/disconnects (default 3).",
        ),
        click.option(
            "--request-timeout",
            type=click.FloatRange(min=0.1),
            help="Seconds to wait for one model answer (default 600).",
        ),
        click.option(
            "--model-option",
            "model_options",
            multiple=True,
            metavar="KEY=VALUE",
            help="A backend option (e.g. n_ctx=8192 for the local model; repeatable), the value "
            "a YAML scalar.",
        ),
    )


def model_config(
    options: Mapping[str, Any],
    *,
    sampling: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> ModelConfig:
    """The ``ModelConfig`` the model flags describe (``palaestra.models.model_config``)."""
    from palaestra.models.resolve import model_config as resolve

    backend_options = {
        **(extra or {}),
        **assignments(options.get("model_options", ()), "--model-option"),
    }
    return resolve(
        options["model_spec"],
        api=options.get("api"),
        model_name=options.get("model_name"),
        # A variable named with --api-key-env wins over OPENAI_API_KEY (which click reads in).
        api_key=None if options.get("api_key_env") else options.get("api_key") or None,
        api_key_env=options.get("api_key_env"),
        config_path=options.get("model_config"),
        max_retries=options.get("max_retries"),
        request_timeout=options.get("request_timeout"),
        sampling=sampling or None,
        options=backend_options or None,
    )


user_model_flags = _stacked(
    click.option(
        "--user-model",
        "user_model_spec",
        multiple=True,
        help="The model that plays the simulated user of an environment that has one "
        "(τ²-bench's customer, ...), separate from the policy: the same forms as --model "
        "('local', a base URL, a name from --model-config, a backend's name; repeat it for "
        "replicas). 'local' with --model local shares the one embedded model.",
    ),
    click.option("--user-model-name", help="The `model` field sent to the user model's endpoint."),
    click.option(
        "--user-api-key-env",
        metavar="VARIABLE",
        help="Read the user model endpoint's key from this environment variable (default: "
        "the policy's key, if the user model is the same endpoint; else none).",
    ),
    click.option(
        "--user-model-option",
        "user_model_options",
        multiple=True,
        metavar="KEY=VALUE",
        help="A backend option of the user model (repeatable), the value a YAML scalar.",
    ),
)


def user_model_config(options: Mapping[str, Any]) -> ModelConfig | None:
    """The user model the ``user_model_flags`` describe; None when ``--user-model`` is absent.

    Resolved as ``--model`` is (``palaestra.models.model_config``), with the run's
    ``--model-config``, ``--api``, ``--max-retries`` and ``--request-timeout``. Naming the
    policy's own model (``--model local --user-model local``) takes the policy's key, model
    name and backend options too, unless given: the same config, so one model serves both.
    """
    from palaestra.models.resolve import model_config as resolve

    specs = tuple(options.get("user_model_spec") or ())
    if not specs:
        for flag in ("user_model_name", "user_api_key_env"):
            if options.get(flag):
                raise ConfigError(f"--{flag.replace('_', '-')} needs --user-model")
        if options.get("user_model_options"):
            raise ConfigError("--user-model-option needs --user-model")
        return None
    same_endpoint = specs == tuple(options.get("model_spec") or ())
    key = options.get("api_key") if same_endpoint and not options.get("api_key_env") else None
    backend_options = assignments(options.get("user_model_options", ()), "--user-model-option")
    if same_endpoint and not backend_options:  # the policy's model: its options too (one model)
        backend_options = assignments(options.get("model_options", ()), "--model-option")
    return resolve(
        specs,
        api=options.get("api"),
        model_name=options.get("user_model_name")
        or (options.get("model_name") if same_endpoint else None),
        api_key=None if options.get("user_api_key_env") else key or None,
        api_key_env=options.get("user_api_key_env")
        or (options.get("api_key_env") if same_endpoint else None),
        config_path=options.get("model_config"),
        max_retries=options.get("max_retries"),
        request_timeout=options.get("request_timeout"),
        options=backend_options or None,
    )


scale_flags = _stacked(
    click.option(
        "--workers",
        type=click.IntRange(min=1),
        help="Run rollouts in N worker processes (or N Ray actors with --executor ray) that "
        "share --concurrency; this process stays the one writer. Default: 1, in this process "
        "(with --executor ray: the cluster's CPUs).",
    ),
    click.option(
        "--executor",
        type=click.Choice(["local", "ray"]),
        default="local",
        show_default=True,
        help="Where rollouts run: this machine, or actors on a Ray cluster (pip install "
        "'palaestra[ray]').",
    ),
    click.option(
        "--ray-address",
        help="The Ray cluster to join (ray://host:10001, auto). Default: start a local one.",
    ),
)
"""``--workers``, ``--executor`` and ``--ray-address`` (``collect`` and ``eval``)."""


def metrics_port_option(
    help: str = "Serve Prometheus metrics of the run on http://127.0.0.1:PORT/metrics while "
    "it runs.",
) -> Callable[[F], F]:
    """``--metrics-port`` (``collect``'s help unless ``help`` says how a command serves it)."""
    return click.option("--metrics-port", type=click.IntRange(min=1, max=65535), help=help)


def scale_fields(options: Mapping[str, Any]) -> dict[str, Any]:
    """The collection fields the scale flags and ``--metrics-port`` give (``CollectOptions``'s
    ``workers``, ``executor``, ``ray_address``, ``metrics_port``; ``RunFields``' too)."""
    return {
        "workers": options["workers"],
        "executor": options["executor"],
        "ray_address": options["ray_address"],
        "metrics_port": options["metrics_port"],
    }


hosted_tools_flag = click.option(
    "--hosted-tools",
    is_flag=True,
    help="Send provider-hosted tools a task names (web search, file search, code interpreter) "
    "even when its environment declares no network. Default: such runs are closed-book, the "
    "model's requests without them, and every row says so (_palaestra.closed_book).",
)
"""``--hosted-tools`` (``collect`` and ``eval``): ``CollectOptions.hosted_tools``."""


SAMPLING = ("temperature", "top_p", "max_output_tokens")
RUN_FIELDS = (
    "repeats",
    "concurrency",
    "limit",
    "num_tasks",
    "seed",
    "resume",
    "overwrite",
    "failures_as_zero",
    "hosted_tools",
)
"""The sampling flags ``run_flags`` gives, by their option names."""

run_flags = _stacked(
    model_flags(),
    user_model_flags,
    agent_flags,
    click.option(
        "--repeats",
        type=click.IntRange(min=1),
        default=1,
        show_default=True,
        help="Rollouts per task (rollout_index 0..N-1): pass@k and pass^k for k up to N.",
    ),
    click.option(
        "--concurrency",
        type=click.IntRange(min=1),
        help="Rollouts in flight at once (eval: per environment, run one after the other); "
        "also bounds what is resident in memory. Default: 16, or 1 for the local model (it "
        "answers one request at a time, and one rollout at a time keeps its prompt cache warm).",
    ),
    click.option(
        "--limit", type=click.IntRange(min=1), help="Use only the first N tasks (of each)."
    ),
    click.option(
        "--num-tasks",
        type=click.IntRange(min=1),
        help="Generate N tasks with the environment's generator instead of reading its tasks.",
    ),
    click.option(
        "--seed", type=int, default=0, show_default=True, help="Seed of the task generator."
    ),
    click.option(
        "--resume",
        is_flag=True,
        help="Continue a killed run: finished rollouts are kept. Refused unless it is the same "
        "run (env, its version and args, input content, repeats, agent and its options, "
        "model, sampling: see <output>_run.json).",
    ),
    click.option("--overwrite", is_flag=True, help="Delete an earlier run's files and start over."),
    click.option(
        "--failures-as-zero",
        is_flag=True,
        help="Read failed rollouts as reward 0 in the figures shown (default: left out).",
    ),
    hosted_tools_flag,
    scale_flags,
    click.option("--temperature", type=float, help="Override the tasks' temperature."),
    click.option("--top-p", type=float, help="Override the tasks' top_p."),
    click.option(
        "--max-output-tokens",
        type=click.IntRange(min=1),
        help="Override the tasks' max_output_tokens.",
    ),
)
"""What a run of rollouts takes, ``collect``'s and ``eval``'s alike: the model, user model and
agent, repeats, concurrency, the tasks (limit, generated), resume or overwrite, how failures
read, scale and sampling. Their values: ``run_fields``, ``sampling_of``."""


def sampling_of(options: Mapping[str, Any]) -> dict[str, Any]:
    """The sampling overrides the flags set (``--temperature``, ``--top-p``, ...)."""
    return {name: options[name] for name in SAMPLING if options[name] is not None}


def run_fields(options: Mapping[str, Any]) -> dict[str, Any]:
    """The collection fields ``run_flags`` and ``--metrics-port`` give, as ``CollectOptions``
    and ``palaestra.run.eval.plan`` name them."""
    return {name: options[name] for name in RUN_FIELDS} | scale_fields(options)

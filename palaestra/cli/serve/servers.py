"""``palaestra serve env``, ``palaestra serve agent`` and ``palaestra serve spec``.

Each parses its flags into a ``ServeSpec`` and calls ``palaestra.serve.server.serve``.
``--unix-socket`` serves on a Unix socket too, as a stack's env and model servers do.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import click
from rich.console import Console

from palaestra.cli.errors import exit_on_user_error
from palaestra.cli.options import (
    agent_flags,
    agent_spec,
    env_arg_option,
    env_options,
    env_spec,
    hosted_tools_flag,
    model_flags,
    user_model_config,
    user_model_flags,
)
from palaestra.cli.options import model_config as model_config_of
from palaestra.errors import ConfigError

if TYPE_CHECKING:
    from palaestra.spec import ServeSpec

# palaestra.spec (pydantic model building, slow) loads when a command runs, not at start-up.

TOKEN_ENV = "PALAESTRA_SERVER_TOKEN"
F = TypeVar("F", bound=Callable[..., Any])

host_option = click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Interface to bind (127.0.0.1: this machine only).",
)
port_option = click.option(
    "--port",
    default=0,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port to bind; 0 picks a free one and prints it.",
)

unix_socket_option = click.option(
    "--unix-socket",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also listen on this Unix socket (clients reach it as the http+unix:// URL the "
    "server prints; its directory decides who may connect). A socket file no server answers "
    "on (left by a killed server) is replaced; any other existing file is refused.",
)


def tasks_option(help: str) -> Callable[[F], F]:
    """``--tasks FILE`` of a command that serves an environment (what they are for: ``help``)."""
    return click.option(
        "--tasks",
        "tasks_path",
        type=click.Path(path_type=Path, dir_okay=False, exists=True),
        help=help,
    )


def served_env_spec(
    kind: Literal["env", "openenv", "ors"], env_name: str, options: dict[str, Any], **fields: Any
) -> ServeSpec:
    """The ``ServeSpec`` of a command serving ENV_NAME (``--tasks``, the user model, where it
    listens), with the ``fields`` of its ``kind``."""
    from palaestra.spec import ServeSpec

    options["env_spec"] = env_name
    options.setdefault("unix_socket", None)
    return ServeSpec(
        kind=kind,
        env=env_spec(options),
        tasks=options["tasks_path"],
        user_model=user_model_config(options),
        **listen_fields(options),
        **fields,
    )


def token_options(command: F) -> F:
    """``--token`` (or ``PALAESTRA_SERVER_TOKEN``) and ``--token-file``: the bearer token."""
    return with_token_options("Require this bearer token on every request.")(command)


def with_token_options(what: str) -> Callable[[F], F]:
    """The token options, ``--token``'s help starting with ``what``."""

    def add(command: F) -> F:
        command = click.option(
            "--token-file",
            type=click.Path(path_type=Path, dir_okay=False),
            help="Read the bearer token from this file (surrounding whitespace is dropped).",
        )(command)
        return click.option(
            "--token",
            envvar=TOKEN_ENV,
            show_envvar=True,
            help=f"{what} Given on the command line it is visible to every user of the "
            f"machine (ps): prefer {TOKEN_ENV} or --token-file.",
        )(command)

    return add


def read_token(token: str | None, token_file: Path | None) -> str | None:
    """The token to require: ``--token-file``'s content, else ``--token`` or the variable."""
    if token_file is None:
        return token or None
    try:
        text = token_file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or "not a text file"
        raise ConfigError(f"cannot read --token-file {token_file}: {reason}") from None
    if not text:
        raise ConfigError(f"--token-file {token_file} is empty")
    return text


@click.command("env")
@click.argument("env_name")
@env_arg_option
@tasks_option("Tasks NeMo Evaluator clients address by index. Default: the example tasks.")
@click.option(
    "--max-sessions",
    type=click.IntRange(min=0),
    help="Live sessions the server holds; a seed over the cap is answered 503 with "
    "Retry-After (clients wait and retry). 0 lifts the cap. Default: 32768.",
)
@click.option(
    "--max-task-bytes",
    type=click.IntRange(min=0),
    help="Largest task (seed body) a session may hold, in bytes; a larger one is answered "
    "413. 0 lifts the cap. Default: 1048576 (1 MiB).",
)
@click.option(
    "--max-total-task-bytes",
    type=click.IntRange(min=0),
    help="Bytes of task the live sessions may hold together (what seeding can grow the "
    "server by); a seed over it is answered 503 with Retry-After. 0 lifts the cap. "
    "Default: 268435456 (256 MiB).",
)
@user_model_flags
@host_option
@port_option
@unix_socket_option
@token_options
def serve_env_command(env_name: str, **options: Any) -> None:
    """Serve an environment (NeMo Gym resources-server and NeMo Evaluator protocols).

    ENV_NAME is a name (see `palaestra envs`), ./file.py[:Class] or module:Class.
    """
    console = Console(stderr=True)
    with exit_on_user_error(console):
        spec = served_env_spec(
            "env",
            env_name,
            options,
            max_sessions=options["max_sessions"],
            max_task_bytes=options["max_task_bytes"],
            max_total_task_bytes=options["max_total_task_bytes"],
        )
        _serve(spec)


@click.command("agent")
@env_options()
@model_flags()
@user_model_flags
@agent_flags
@hosted_tools_flag
@host_option
@port_option
@unix_socket_option
@token_options
def serve_agent_command(**options: Any) -> None:
    """Serve an agent bound to an environment and a model (/run, /v1/responses)."""
    from palaestra.spec import ServeSpec

    console = Console(stderr=True)
    with exit_on_user_error(console):
        where = listen_fields(options)
        spec = ServeSpec(
            kind="agent",
            env=env_spec(options, where["token"]),
            model=model_config_of(options),
            user_model=user_model_config(options),
            agent=agent_spec(options),
            hosted_tools=options["hosted_tools"],
            **where,
        )
        _serve(spec)


@click.command("spec", hidden=True)
@click.argument("spec_file", type=click.Path(path_type=Path, dir_okay=False))
@token_options
def serve_spec_command(spec_file: Path, token: str | None, token_file: Path | None) -> None:
    """Serve the server a ServeSpec JSON file describes (how `palaestra run` starts each
    server of a stack; the token comes from PALAESTRA_SERVER_TOKEN or --token-file)."""
    console = Console(stderr=True)
    with exit_on_user_error(console):
        spec = read_serve_spec(spec_file)
        secret = read_token(token, token_file)
        env = spec.env.model_copy(update={"token": secret}) if spec.env.url else spec.env
        _serve(spec.model_copy(update={"token": secret, "env": env}))


def read_serve_spec(path: Path) -> ServeSpec:
    """A ``ServeSpec`` from its JSON file; one line naming the file when it is not one."""
    import orjson

    from palaestra.spec import ServeSpec, validated

    try:
        raw = orjson.loads(path.read_bytes())
    except OSError as error:
        raise ConfigError(f"cannot read server spec {path}: {error.strerror}") from None
    except orjson.JSONDecodeError as error:
        raise ConfigError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a server spec is a JSON object")
    return validated(ServeSpec, raw, str(path))


def listen_fields(options: dict[str, Any]) -> dict[str, Any]:
    """Host, port, Unix socket and token of a server command."""
    token = read_token(options["token"], options["token_file"])
    where = {"host": options["host"], "port": options["port"], "token": token}
    socket: Path | None = options["unix_socket"]
    if socket is not None:  # absolute: the URL the server prints works from any directory
        where["unix_socket"] = socket.absolute()
    return where


def _serve(spec: ServeSpec) -> None:
    from palaestra.serve.server import serve

    serve(spec)

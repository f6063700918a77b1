"""``palaestra run STACK.yaml`` starts a stack of servers; ``palaestra status`` shows it.

The stack is recorded in a per-user state directory (``palaestra.stack.state``), so
``status`` finds it from any directory. With a token set, the head server requires it too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import orjson
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from palaestra.cli.errors import exit_on_user_error
from palaestra.cli.serve.servers import read_token, with_token_options
from palaestra.errors import ConfigError

if TYPE_CHECKING:
    from palaestra.stack.config import StackConfig

T = TypeVar("T")
LOCAL_STATE = Path(".palaestra") / "stack.json"
"""The record of the stack started last from this directory, for scripts (status reads the
per-user ones, one per running stack)."""


@click.command("run")
@click.argument("stack_file", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--log-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where server logs go (no other running stack may use it). Default: "
    ".palaestra/logs/<stack name>/, or <stack name>-2/, ... while another stack holds it.",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a stack-file value, e.g. --set servers.agent.max_steps=4 (repeatable).",
)
def run_command(stack_file: Path, log_dir: Path | None, overrides: tuple[str, ...]) -> None:
    """Start every server of a stack file, supervise them, stop them all on Ctrl-C.

    The servers die with this command, even on kill -9. With PALAESTRA_SERVER_TOKEN set (or
    `token:` in an env.yaml beside the stack file) every server and the head require it.
    `palaestra status` finds the stack from any directory.
    """
    from palaestra.stack.config import load_stack, load_token
    from palaestra.stack.logs import LogDirectory

    console = Console(stderr=True)
    with exit_on_user_error(console):
        config = load_stack(stack_file, overrides)
        token = load_token(stack_file, dict(os.environ))
        logs = LogDirectory.claim(
            log_dir or Path(".palaestra") / "logs" / stack_file.stem, chosen=log_dir is not None
        )
        from palaestra._util.loop import run_on_fast_loop

        try:
            run_on_fast_loop(_run(config, stack_file, logs.path, token, console))
        finally:
            logs.release()


async def _run(
    config: StackConfig, stack_file: Path, logs: Path, token: str | None, console: Console
) -> None:
    from palaestra.http.announce import serve_announced
    from palaestra.http.guard import Guard
    from palaestra.stack.head import head_app
    from palaestra.stack.state import record_stack
    from palaestra.stack.supervisor import Supervisor

    started = time.perf_counter()
    supervisor = Supervisor(config, log_dir=logs, token=token)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    head_task: asyncio.Task[None] | None = None
    states: list[Path] = []
    try:
        await _interruptible(supervisor.start(), stop)
        if stop.is_set():
            return
        head_url: asyncio.Future[str] = loop.create_future()
        app = Guard(head_app(supervisor.snapshot, stack=str(stack_file)), token=token)
        head_task = asyncio.create_task(
            serve_announced(
                app,
                host=config.host,
                port=config.head_port,
                on_ready=head_url.set_result,
                stop=stop,
            )
        )
        either: set[asyncio.Future[Any]] = {head_url, head_task}
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if not head_url.done():
            head_task.result()  # the head could not listen: its one-line error
            return
        url = head_url.result()
        states.append(record_stack(url, stack_file, os.environ))
        LOCAL_STATE.parent.mkdir(parents=True, exist_ok=True)
        LOCAL_STATE.write_bytes(states[0].read_bytes())
        states.append(LOCAL_STATE)
        console.print(_servers_table(supervisor.snapshot(), url))
        console.print(
            f"[green]ready[/] in {time.perf_counter() - started:.1f} s, logs in "
            f"{escape(str(logs))} — Ctrl-C stops everything",
            highlight=False,
        )
        while not stop.is_set():
            death = await _interruptible(supervisor.wait_for_death(), stop)
            if death is not None:
                console.print(f"[red]error:[/] {escape(death.describe_death())}", highlight=False)
    finally:
        if head_task is not None:
            stop.set()
            await asyncio.gather(head_task, return_exceptions=True)
        await supervisor.stop()
        for state in states:
            if state != LOCAL_STATE or _recorded_pid(state) == os.getpid():
                state.unlink(missing_ok=True)  # a stack started here later holds LOCAL_STATE
        console.print("stack stopped", highlight=False)


def _recorded_pid(state: Path) -> int | None:
    """The pid a stack record names (``None`` if it cannot be read)."""
    try:
        return int(orjson.loads(state.read_bytes())["pid"])
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


async def _interruptible(work: Coroutine[Any, Any, T], stop: asyncio.Event) -> T | None:
    """Await ``work`` unless ``stop`` is set first (then cancel it and return None)."""
    task = asyncio.ensure_future(work)
    stopper = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    stopper.cancel()
    if task in done:
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return None


def _servers_table(servers: list[dict[str, object]], head: str | None) -> Table:
    table = Table(title=f"stack (head {head})" if head else "stack", title_justify="left")
    for column in ("name", "kind", "url", "status", "pid"):
        table.add_column(column)
    for server in servers:
        table.add_row(
            *(str(server.get(c) or "-") for c in ("name", "kind", "url", "status", "pid"))
        )
    return table


@click.command("status")
@click.option("--head", help="Head server URL. Default: every stack running for this user.")
@with_token_options("The stacks' bearer token.")
def status_command(head: str | None, token: str | None, token_file: Path | None) -> None:
    """Show the servers of the running stacks (found from any directory).

    The token is --token-file, PALAESTRA_SERVER_TOKEN, or the env.yaml beside the stack file.
    """
    from palaestra.stack.config import load_token
    from palaestra.stack.state import running_stacks

    console = Console()
    with exit_on_user_error(Console(stderr=True)):
        given = read_token(token, token_file)
        if head is not None:
            console.print(_servers_table(_listing(head, given), head))
            return
        stacks = running_stacks(os.environ)
        if not stacks:
            raise ConfigError("no stack is running (start one with `palaestra run STACK.yaml`)")
        for stack in stacks:
            secret = given or load_token(stack.stack, dict(os.environ))
            table = _servers_table(_listing(stack.head, secret), stack.head)
            table.title = f"{stack.stack} (pid {stack.pid}, head {stack.head})"
            console.print(table)


def _listing(head: str, token: str | None) -> list[dict[str, object]]:
    """The head server's ``/servers``; a one-line ``ConfigError`` when it cannot be read."""
    import urllib.error
    import urllib.request

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"{head}/servers", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            servers: list[dict[str, object]] = orjson.loads(answer.read())["servers"]
            return servers
    except urllib.error.HTTPError as error:
        if error.code == 401:
            raise ConfigError(
                f"the stack's head server {head} refused the request (401): give its token "
                "with PALAESTRA_SERVER_TOKEN or --token-file"
            ) from None
        raise ConfigError(f"the stack's head server {head} answered {error.code}") from None
    except OSError as error:
        raise ConfigError(
            f"the stack's head server {head} does not answer ({error}); the stack is not running"
        ) from None

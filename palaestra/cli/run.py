"""``palaestra run STACK.yaml`` starts a stack of servers; ``palaestra status`` shows it."""

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
from rich.table import Table

from palaestra.cli.errors import exit_on_user_error
from palaestra.errors import ConfigError

if TYPE_CHECKING:
    from palaestra.serve.stack_config import StackConfig

T = TypeVar("T")
STATE_FILE = Path(".palaestra") / "stack.json"


@click.command("run")
@click.argument("stack_file", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--log-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where server logs go. Default: .palaestra/logs/<stack name>/.",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a stack-file value, e.g. --set servers.agent.max_steps=4 (repeatable).",
)
def run_command(stack_file: Path, log_dir: Path | None, overrides: tuple[str, ...]) -> None:
    """Start every server of a stack file, supervise them, stop them all on Ctrl-C."""
    from palaestra.serve.stack_config import load_stack, load_token

    console = Console(stderr=True)
    with exit_on_user_error(console):
        config = load_stack(stack_file, overrides)
        token = load_token(stack_file, dict(os.environ))
        logs = log_dir or Path(".palaestra") / "logs" / stack_file.stem
        from palaestra.serve.uvicorn_runner import run_on_fast_loop

        run_on_fast_loop(_run(config, stack_file, logs, token, console))


async def _run(
    config: StackConfig, stack_file: Path, logs: Path, token: str | None, console: Console
) -> None:
    from palaestra.serve.announce import serve_announced
    from palaestra.serve.head_app import head_app
    from palaestra.serve.supervisor import Supervisor

    started = time.perf_counter()
    supervisor = Supervisor(config, log_dir=logs, token=token)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    head_task: asyncio.Task[None] | None = None
    try:
        await _interruptible(supervisor.start(), stop)
        head_url: asyncio.Future[str] = loop.create_future()
        app = head_app(supervisor.snapshot, stack=str(stack_file))
        head_task = asyncio.create_task(
            serve_announced(
                app,
                host=config.host,
                port=config.head_port,
                on_ready=head_url.set_result,
                stop=stop,
            )
        )
        url = await head_url
        _write_state(url, stack_file)
        console.print(_servers_table(supervisor.snapshot(), url))
        console.print(
            f"[green]ready[/] in {time.perf_counter() - started:.1f} s — Ctrl-C stops everything",
            highlight=False,
        )
        while not stop.is_set():
            death = await _interruptible(supervisor.wait_for_death(), stop)
            if death is not None:
                console.print(f"[red]error:[/] {death.describe_death()}", highlight=False)
    finally:
        if head_task is not None:
            stop.set()
            await asyncio.gather(head_task, return_exceptions=True)
        await supervisor.stop()
        STATE_FILE.unlink(missing_ok=True)
        console.print("stack stopped", highlight=False)


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


def _write_state(head_url: str, stack_file: Path) -> None:
    STATE_FILE.parent.mkdir(parents=True, exist_ok=True)
    STATE_FILE.write_bytes(
        orjson.dumps({"head": head_url, "stack": str(stack_file), "pid": os.getpid()})
    )


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
@click.option("--head", help="Head server URL. Default: the stack started in this directory.")
def status_command(head: str | None) -> None:
    """Show the servers of the running stack."""
    import urllib.request

    console = Console()
    with exit_on_user_error(Console(stderr=True)):
        if head is None:
            if not STATE_FILE.exists():
                raise ConfigError(
                    "no stack is running here (start one with `palaestra run STACK.yaml`)"
                )
            head = str(orjson.loads(STATE_FILE.read_bytes())["head"])
        try:
            with urllib.request.urlopen(f"{head}/servers", timeout=5) as answer:
                listing = orjson.loads(answer.read())
        except OSError as error:
            raise ConfigError(
                f"the stack's head server {head} does not answer ({error}); "
                f"the stack is not running"
            ) from None
        console.print(_servers_table(listing["servers"], head))

"""Turning a user mistake into one clear line and an exit code, never a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console

from palaestra.errors import ConfigError, InputError, ModelUnreachable

EXIT_USER_ERROR = 1
EXIT_INTERRUPTED = 130


@contextmanager
def exit_on_user_error(console: Console) -> Iterator[None]:
    try:
        yield
    except (ConfigError, InputError, ModelUnreachable) as error:
        console.print(f"[red]error:[/] {error}", highlight=False, soft_wrap=True)
        raise SystemExit(EXIT_USER_ERROR) from None
    except KeyboardInterrupt:
        console.print(
            "[yellow]interrupted:[/] finished rollouts are saved; "
            "run the same command with --resume to continue",
            highlight=False,
        )
        raise SystemExit(EXIT_INTERRUPTED) from None

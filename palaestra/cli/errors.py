"""Turning a user mistake into one clear line and an exit code, never a traceback.

Exit codes of the commands: 0 done; 1 a user error (bad flag, input or output path, the
output locked by another collector, a resume of another run, the API key rejected before
anything ran); 2 click's usage errors; 3 a run stopped early, resumable (a service
unreachable, the key rejected mid-run, disk full); 4 nothing this invocation attempted was
scored; 5 `compare --fail-if-worse`: the second run may be worse by more than the margin;
130 interrupted by Ctrl-C; 143 terminated by SIGTERM.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape

from palaestra.collection.runtime import Terminated
from palaestra.errors import ConfigError, InputError, ServiceUnreachable

EXIT_USER_ERROR = 1
EXIT_STOPPED = 3
EXIT_NOTHING_SCORED = 4
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143

_RESUME_HINT = "finished rollouts are saved; run the same command with --resume to continue"


@contextmanager
def exit_on_user_error(console: Console) -> Iterator[None]:
    try:
        yield
    except (ConfigError, InputError, ServiceUnreachable) as error:
        console.print(f"[red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True)
        raise SystemExit(EXIT_USER_ERROR) from None
    except KeyboardInterrupt:
        console.print(f"[yellow]interrupted:[/] {_RESUME_HINT}", highlight=False)
        raise SystemExit(EXIT_INTERRUPTED) from None
    except Terminated:
        console.print(f"[yellow]terminated (SIGTERM):[/] {_RESUME_HINT}", highlight=False)
        raise SystemExit(EXIT_TERMINATED) from None

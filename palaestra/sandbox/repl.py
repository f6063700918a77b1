"""The program inside a sandboxed Python session (run as ``python -c <this file>``).

Standard library only: it runs under the sandbox's interpreter, which cannot see palaestra.
It reads one JSON request per line (``{"code", "timeout", "output_bytes"}``) from the
protocol pipe and answers one JSON line (``stdout``, ``stderr``, ``value``, ``error``,
``timed_out``). The cell's globals persist between requests. Each cell's stdout and stderr
go to unlinked temporary files (at fd level, so subprocesses are captured too); the
program's real stdin and stdout are the protocol and are moved out of the cell's reach.
After ``idle_ttl`` seconds without a request the program exits by itself.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import select
import signal
import sys
import tempfile
import traceback
from typing import IO, Any


class CellTimeout(BaseException):
    """Raised in the cell when its time is up (a BaseException: ``except Exception`` in the
    cell does not swallow it)."""


def _on_alarm(_signum: int, _frame: object) -> None:
    raise CellTimeout


def run_cell(
    code: str, namespace: dict[str, Any], timeout: float, captures: list[IO[bytes]], cap: int
) -> dict[str, Any]:
    for capture in captures:
        capture.seek(0)
        capture.truncate()
    reply: dict[str, Any] = {"value": None, "error": None, "timed_out": False}
    saved = [os.dup(1), os.dup(2)]
    os.dup2(captures[0].fileno(), 1)
    os.dup2(captures[1].fileno(), 2)
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        tree = ast.parse(code, "<cell>", "exec")
        last = tree.body[-1] if tree.body else None
        if isinstance(last, ast.Expr):
            tree.body.pop()
        exec(compile(tree, "<cell>", "exec"), namespace)
        if isinstance(last, ast.Expr):
            value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace)
            if value is not None:
                reply["value"] = repr(value)[:cap]
    except CellTimeout:
        reply["timed_out"] = True
        reply["error"] = f"TimeoutError: the cell ran longer than {timeout:g} s"
    except BaseException as error:  # the cell's own failure, reported to the caller
        trace = error.__traceback__
        frames = trace.tb_next if trace is not None else None
        reply["error"] = "".join(traceback.format_exception(type(error), error, frames))[-cap:]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
    for name, capture in zip(("stdout", "stderr"), captures, strict=True):
        size = capture.seek(0, os.SEEK_END)
        capture.seek(0)
        reply[name] = capture.read(cap).decode(errors="replace")
        reply[name + "_truncated"] = size > cap
    return reply


def _close_all(fds: tuple[int, ...]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def main() -> None:
    idle_ttl = float(sys.argv[1]) if len(sys.argv) > 1 else 600.0
    requests = os.fdopen(os.dup(0), "rb", buffering=0)
    replies = os.fdopen(os.dup(1), "wb")
    protocol = (requests.fileno(), replies.fileno())
    # A process the cell forks must not keep the protocol pipes: it could read the next
    # request or answer in the session's place (a fork bomb would take the session over).
    os.register_at_fork(after_in_child=lambda: _close_all(protocol))
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    captures: list[IO[bytes]] = [tempfile.TemporaryFile() for _ in range(2)]  # noqa: SIM115
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    replies.write(b'{"ready": true}\n')
    replies.flush()
    buffered = b""
    while True:
        while b"\n" not in buffered:
            ready, _, _ = select.select([requests], [], [], idle_ttl)
            chunk = requests.read(1 << 16) if ready else b""
            if not chunk:  # idle for too long, or the host hung up
                os._exit(0)
            buffered += chunk
        line, buffered = buffered.split(b"\n", 1)
        request = json.loads(line)
        reply = run_cell(
            request["code"],
            namespace,
            float(request["timeout"]),
            captures,
            int(request["output_bytes"]),
        )
        replies.write(json.dumps(reply).encode() + b"\n")
        replies.flush()


if __name__ == "__main__":
    main()

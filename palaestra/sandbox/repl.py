"""The program inside a sandboxed Python session (run as ``python -c <this file>``).

Standard library only: it runs under the sandbox's interpreter, which cannot see palaestra.
Two processes, so that no cell can reach the host's protocol channel:

- the supervisor owns the protocol pipes (their fd numbers come in ``PALAESTRA_PROTOCOL``;
  bubblewrap's init does not hold them), makes itself non-dumpable (a process of the same
  uid can then neither open its ``/proc/PID/fd`` nor trace it), and forks
- the worker, which closes the protocol fds before any cell runs, keeps the cells' globals
  and runs one cell per request it gets from the supervisor over a pipe of their own.

The host sends one JSON request per line (``{"code", "timeout", "output_bytes"}``) and gets
exactly one JSON line back per request (``stdout``, ``stderr``, ``value``, ``error``,
``timed_out``, ``*_truncated``), written by the supervisor alone. Each request to the worker
carries a fresh random token that its answer must repeat: a line a cell writes on the
worker's pipe is dropped unless it names the running cell's token, so a cell can at most
forge its own result, never a later cell's, and never the order of the answers. When the
worker dies the supervisor answers ``{"ended": ...}`` (exit code or signal, CPU seconds)
and exits. After ``idle_ttl`` seconds without a request it exits by itself.
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import fcntl
import json
import os
import select
import signal
import sys
import tempfile
import traceback
from typing import Any

_PR_SET_DUMPABLE = 4
_REPLY_KEYS = ("stdout", "stderr", "value", "error")
_FLAG_KEYS = ("timed_out", "stdout_truncated", "stderr_truncated")


class CellTimeout(BaseException):
    """Raised in the cell when its time is up (a BaseException: ``except Exception`` in the
    cell does not swallow it)."""


def _on_alarm(_signum: int, _frame: object) -> None:
    raise CellTimeout


def run_cell(
    code: str, namespace: dict[str, Any], timeout: float, captures: list[int], cap: int
) -> dict[str, Any]:
    for capture in captures:
        os.ftruncate(capture, 0)
    reply: dict[str, Any] = {"value": None, "error": None, "timed_out": False}
    saved = [os.dup(1), os.dup(2)]
    os.dup2(captures[0], 1)
    os.dup2(captures[1], 2)
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
        # What the cell's flush could not write (its fd closed, the disk bound hit) would go
        # out with the next cell's output: it goes to /dev/null, where the worker's fds point.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
    for name, capture in zip(("stdout", "stderr"), captures, strict=True):
        reply[name] = _head(capture, cap).decode(errors="replace")
        reply[name + "_truncated"] = os.fstat(capture).st_size > cap
    return reply


def capture_file() -> int:
    """A file for a cell's output: appended to, read and emptied by position only. A child
    the cell forks shares its offset and may move it (a fork bomb's children finish the cell
    in their parent's place); an offset-free file gives the next cell none of its bytes."""
    with tempfile.TemporaryFile(buffering=0) as file:
        fd = os.dup(file.fileno())
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_APPEND)
    return fd


def _head(fd: int, cap: int) -> bytes:
    """The first ``cap`` bytes of the file ``fd``."""
    data = b""
    while len(data) < cap:
        chunk = os.pread(fd, cap - len(data), len(data))
        if not chunk:
            break
        data += chunk
    return data


def _close_all(fds: tuple[int, ...]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


class Lines:
    """Lines from a pipe, at most ``cap`` bytes each (a longer one is an error)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffered = b""

    def next(self, cap: int, timeout: float | None = None) -> bytes | None:
        """The next line; ``None`` at end of file or after ``timeout`` seconds of silence."""
        while b"\n" not in self.buffered:
            if len(self.buffered) > cap:
                raise ValueError("line too long")
            ready, _, _ = select.select([self.fd], [], [], timeout)
            chunk = os.read(self.fd, 1 << 16) if ready else b""
            if not chunk:
                return None
            self.buffered += chunk
        line, self.buffered = self.buffered.split(b"\n", 1)
        if len(line) > cap:
            raise ValueError("line too long")
        return line


def serve_cells(requests: int, replies: int) -> None:
    """The worker: run each request's code in one namespace, answer with its token."""
    # A process the cell forks must not keep the worker's pipes: it could take the next
    # request in the worker's place.
    os.register_at_fork(after_in_child=lambda: _close_all((requests, replies)))
    captures = [capture_file() for _ in range(2)]
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    lines = Lines(requests)
    while True:
        line = lines.next(1 << 40)
        if line is None:  # the supervisor is gone
            os._exit(0)
        try:  # a cell may have written on this pipe too: skip what is not a request
            request = json.loads(line)
            code, token = str(request["code"]), str(request["token"])
            timeout, cap = float(request["timeout"]), int(request["output_bytes"])
        except (ValueError, TypeError, KeyError):
            continue
        reply = run_cell(code, namespace, timeout, captures, cap)
        reply["token"] = token
        data = json.dumps(reply).encode() + b"\n"
        while data:
            data = data[os.write(replies, data) :]


def start_worker(protocol: tuple[int, int]) -> tuple[int, int, int]:
    """Fork the worker; return its pid and our ends of its request and reply pipes."""
    to_worker = os.pipe()
    from_worker = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            _close_all((*protocol, to_worker[1], from_worker[0]))
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.close(null)
            serve_cells(to_worker[0], from_worker[1])
        finally:
            os._exit(70)
    os.close(to_worker[0])
    os.close(from_worker[1])
    return pid, to_worker[1], from_worker[0]


def worker_answer(lines: Lines, token: str, cap: int) -> dict[str, Any] | None:
    """The worker's answer that names ``token`` (other lines are dropped); ``None`` when the
    worker's pipe ended. ``ValueError`` for a line over ``cap``."""
    while True:
        line = lines.next(cap)
        if line is None:
            return None
        try:
            answer = json.loads(line)
        except ValueError:
            continue
        if isinstance(answer, dict) and answer.get("token") == token:
            return answer


def clean(answer: dict[str, Any]) -> dict[str, Any]:
    """Only the reply's own fields, of their own types."""
    reply: dict[str, Any] = {}
    for key in _REPLY_KEYS:
        value = answer.get(key)
        reply[key] = value if isinstance(value, str) else None
    reply["stdout"] = reply["stdout"] or ""
    reply["stderr"] = reply["stderr"] or ""
    for key in _FLAG_KEYS:
        reply[key] = answer.get(key) is True
    return reply


def ending(pid: int, *, violated: bool) -> dict[str, Any]:
    """How the worker ended. One that broke the protocol, or closed its pipe and lives on
    (a second later), is killed, and that is said (``killed``): its death is ours."""
    pidfd = os.pidfd_open(pid)
    killed = violated or not select.select([pidfd], [], [], 1.0)[0]
    os.close(pidfd)
    if killed:
        os.kill(pid, signal.SIGKILL)
    _, status, usage = os.wait4(pid, 0)
    return {
        "ended": True,
        "killed": killed,
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "cpu": usage.ru_utime + usage.ru_stime,
    }


def main() -> None:
    idle_ttl = float(sys.argv[1]) if len(sys.argv) > 1 else 600.0
    request_fd, reply_fd = (int(fd) for fd in os.environ.pop("PALAESTRA_PROTOCOL").split(","))
    # Non-dumpable: a process of our uid (the worker, anything a cell starts) can neither
    # open our /proc/PID/fd/* nor ptrace us; the worker inherits the flag, which is harmless.
    ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    pid, to_worker, from_worker = start_worker((request_fd, reply_fd))
    host, worker = Lines(request_fd), Lines(from_worker)
    replies = os.fdopen(reply_fd, "wb")
    replies.write(b'{"ready": true}\n')
    replies.flush()
    while True:
        line = host.next(1 << 40, idle_ttl)
        if line is None:  # idle for too long, or the host hung up
            os._exit(0)
        request = json.loads(line)
        token = os.urandom(16).hex()
        cap = int(request["output_bytes"])
        forward = {
            "code": request["code"],
            "timeout": float(request["timeout"]),
            "output_bytes": cap,
            "token": token,
        }
        answer, violated = None, False
        try:
            os.write(to_worker, json.dumps(forward).encode() + b"\n")
            answer = worker_answer(worker, token, 24 * cap + (1 << 16))
        except ValueError:
            violated = True
        except OSError:  # the worker is gone: EPIPE
            pass
        reply = clean(answer) if answer is not None else ending(pid, violated=violated)
        replies.write(json.dumps(reply).encode() + b"\n")
        replies.flush()
        if answer is None:
            os._exit(0)


if __name__ == "__main__":
    main()

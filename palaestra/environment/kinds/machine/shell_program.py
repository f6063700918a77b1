"""The program inside a sandboxed shell session (run as ``python -c <this file>``).

Standard library only: it runs under the sandbox's interpreter, which cannot see palaestra.
It owns the protocol pipes (fd numbers in ``PALAESTRA_PROTOCOL``), makes itself non-dumpable
(so a command of the same uid can neither open its ``/proc/PID/fd`` nor trace it) and starts
one ``bash`` whose stdin is a pipe it writes commands to, whose stdout and stderr are one
pipe (so the model reads them interleaved, as a terminal shows them), and whose fd 3 is a
status pipe commands cannot write to (it is closed for them).

Each request is one JSON line ``{"command", "timeout", "head", "tail"}``; each reply one JSON
line: ``head`` and ``tail`` (the first and last bytes of the output), ``total`` (bytes the
command wrote), ``status`` (its exit status, or ``None``), ``timed_out``, ``interrupted`` and
``ended`` (the shell is gone: the supervisor exits after that reply and the host starts a new
one). A command runs as ``eval`` inside a function, so ``cd``, ``export`` and functions it
defines stay for the next command, its stdin is ``/dev/null``, and its status line carries a
fresh random token. On timeout the shell's process group gets SIGINT (bash's ``INT`` trap
returns from the function: the rest of the command is skipped, the shell lives on);
background jobs ignore it, as in any non-interactive shell. A command that does not stop
within ``GRACE`` seconds (a loop of builtins, a program that ignores SIGINT) is killed with
everything in the sandbox, and the reply says the shell ended.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import secrets
import select
import signal
import subprocess
import sys
import time
from typing import Any

GRACE = 2.0
"""Seconds a command has to stop after SIGINT before the shell is killed."""
_PR_SET_DUMPABLE = 4
_STATUS_FD = 3


def quoted(text: str) -> str:
    """``text`` as one single-quoted bash word."""
    return "'" + text.replace("'", "'\\''") + "'"


class Shell:
    """One bash process and the pipes to drive it."""

    def __init__(self) -> None:
        out_read, out_write = os.pipe()
        status_read, status_write = os.pipe()
        self.process = subprocess.Popen(
            ["/bin/bash", "--noprofile", "--norc"],
            stdin=subprocess.PIPE,
            stdout=out_write,
            stderr=out_write,
            pass_fds=(status_write,),
            start_new_session=True,
            env={**os.environ, "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat"},
        )
        os.close(out_write)
        os.close(status_write)
        self.output = out_read
        self.status = status_read
        self.buffered = b""
        self.send(f"exec {_STATUS_FD}>&{status_write} {status_write}>&-\n")

    def send(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text.encode())
        self.process.stdin.flush()

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        token = secrets.token_hex(8)
        timeout = float(request["timeout"])
        capture = Capture(int(request["head"]), int(request["tail"]))
        reply: dict[str, Any] = {"status": None, "timed_out": False, "interrupted": None}
        try:
            self.send(
                "__palaestra_run() { eval \"$1\"; }; trap 'return 130' INT; "
                f"__palaestra_run {quoted(request['command'])} </dev/null {_STATUS_FD}>&-; "
                f"printf '%s %d\\n' {token} $? >&{_STATUS_FD}\n"
            )
        except OSError:  # the shell is gone (it was ended by the last command's children)
            return {**reply, **capture.reply(), "ended": self.end()}
        deadline = time.monotonic() + timeout
        interrupted_at: float | None = None
        while True:
            status = self.status_line(token)
            if status is not None:
                self.drain(capture, 0.0)
                reply["status"] = status
                return {**reply, **capture.reply(), "ended": None}
            if self.status < 0:  # the status pipe ended: bash exited
                self.drain(capture, 0.2)
                return {**reply, **capture.reply(), "ended": self.end()}
            now = time.monotonic()
            if interrupted_at is None and now >= deadline:
                reply["timed_out"] = True
                reply["interrupted"] = "SIGINT"
                with contextlib.suppress(OSError):
                    os.killpg(self.process.pid, signal.SIGINT)
                interrupted_at = now
            elif interrupted_at is not None and now >= interrupted_at + GRACE:
                reply["interrupted"] = "killed"
                kill_everything()
                self.drain(capture, 0.2)
                return {**reply, **capture.reply(), "ended": self.end()}
            limit = deadline if interrupted_at is None else interrupted_at + GRACE
            self.wait(capture, max(limit - time.monotonic(), 0.0))

    def wait(self, capture: Capture, timeout: float) -> None:
        """Read output and status until either has news or ``timeout`` passes."""
        fds = [fd for fd in (self.output, self.status) if fd >= 0]
        ready, _, _ = select.select(fds, [], [], timeout)
        if self.output in ready:
            chunk = os.read(self.output, 1 << 16)
            if chunk:
                capture.add(chunk)
            else:
                os.close(self.output)
                self.output = -1
        if self.status in ready:
            chunk = os.read(self.status, 4096)
            if chunk:
                self.buffered += chunk
            else:
                os.close(self.status)
                self.status = -1

    def drain(self, capture: Capture, timeout: float) -> None:
        """What is left in the output pipe (written before the status line)."""
        while self.output >= 0:
            ready, _, _ = select.select([self.output], [], [], timeout)
            if not ready:
                return
            chunk = os.read(self.output, 1 << 16)
            if not chunk:
                return
            capture.add(chunk)

    def status_line(self, token: str) -> int | None:
        """The exit status the shell reported for this command, once it has."""
        while b"\n" in self.buffered:
            line, self.buffered = self.buffered.split(b"\n", 1)
            fields = line.decode(errors="replace").split()
            if len(fields) == 2 and fields[0] == token:
                with contextlib.suppress(ValueError):
                    return int(fields[1])
        if len(self.buffered) > 4096:
            self.buffered = b""
        return None

    def end(self) -> dict[str, Any]:
        """How bash ended (after its status pipe closed or it was killed)."""
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            kill_everything()
            code = self.process.wait()
        if code < 0:
            return {"signal": -code}
        return {"exit_code": code}


class Capture:
    """The first ``head`` and the last ``tail`` bytes of a command's output, and its size."""

    def __init__(self, head: int, tail: int) -> None:
        self.head_size, self.tail_size = head, tail
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_size - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.tail_size:
                del self.tail[: len(self.tail) - self.tail_size]

    def reply(self) -> dict[str, Any]:
        return {
            "head": self.head.decode(errors="replace"),
            "tail": self.tail.decode(errors="replace"),
            "total": self.total,
        }


def kill_everything() -> None:
    """SIGKILL every process of the sandbox but its init and this supervisor (the pid
    namespace shows no other)."""
    mine = {1, os.getpid()}
    for _ in range(50):
        found = [int(name) for name in os.listdir("/proc") if name.isdigit()]
        found = [pid for pid in found if pid not in mine and not _zombie(pid)]
        if not found:
            return
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def serve(requests: int, replies: int, idle_ttl: float) -> None:
    shell = Shell()
    os.write(replies, b'{"ready": true}\n')
    buffered = b""
    while True:
        while b"\n" not in buffered:
            ready, _, _ = select.select([requests], [], [], idle_ttl)
            chunk = os.read(requests, 1 << 20) if ready else b""
            if not chunk:
                kill_everything()
                return
            buffered += chunk
        line, buffered = buffered.split(b"\n", 1)
        reply = shell.run(json.loads(line))
        os.write(replies, json.dumps(reply).encode() + b"\n")
        if reply["ended"] is not None:
            kill_everything()
            return


def main() -> None:
    # A collector started in the background (nohup, `&` without job control) runs with SIGINT
    # ignored, which every child inherits, and bash cannot undo an ignored signal: commands
    # would then not stop on the timeout's SIGINT. The shell starts with it at its default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    requests, replies = (int(fd) for fd in os.environ.pop("PALAESTRA_PROTOCOL").split(","))
    serve(requests, replies, float(sys.argv[1]))


if __name__ == "__main__":
    main()

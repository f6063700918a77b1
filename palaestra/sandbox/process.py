"""One launched sandbox process, driven from the event loop without threads.

Exit is seen through a pidfd, not through the pipes (a grandchild may hold those open), and
the pipes are asyncio streams. ``kill`` reaches everything the run started: with bubblewrap
it kills the pid namespace's init (the kernel then kills the whole namespace and ``bwrap``
reaps it, so nothing is orphaned); without it, the process group and every process of the
run's uid.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO

from palaestra.sandbox.cgroup import RunCgroup
from palaestra.sandbox.isolation import kill_uid
from palaestra.sandbox.limits import Limit, Limits


class SandboxProcess:
    """A running isolated process. Create with ``await SandboxProcess.start(...)``."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        *,
        status_fd: int | None,
        uid: int | None,
        stdout: asyncio.StreamReader,
        stderr: asyncio.StreamReader | None,
        stdin: asyncio.WriteTransport | None,
        cgroup: RunCgroup | None = None,
    ) -> None:
        self.popen = popen
        self.cgroup = cgroup
        self.pid = popen.pid
        self.stdout = stdout
        self.stderr = stderr
        self.stdin = stdin
        self._status_fd = status_fd
        self._status = b""
        self._init_pid: int | None = None
        self._uid = uid
        self._loop = asyncio.get_running_loop()
        self._pidfd = os.pidfd_open(popen.pid)
        self._exited: asyncio.Future[int] = self._loop.create_future()
        self._loop.add_reader(self._pidfd, self._on_exit)
        self.killed = False
        self._closed = False
        self._transports: list[asyncio.BaseTransport] = []
        self.on_kill: Callable[[], None] | None = None
        """Also called by ``kill``: reaches what the run started where signals to our own
        children do not (a command a ``docker exec`` client runs inside a container)."""

    @classmethod
    async def start(
        cls,
        build_argv: Callable[[int | None, int | None], Sequence[str]],
        *,
        bubblewrap: bool,
        uid: int | None,
        cwd: str,
        env: dict[str, str],
        stdin: IO[bytes] | int,
        stream_limit: int = 2**16,
        preexec: Callable[[], None] | None = None,
        capture_stderr: bool = True,
        seccomp: bytes | None = None,
        protocol: bool = False,
        cgroup: RunCgroup | None = None,
        protocol_on_stdio: bool = False,
    ) -> SandboxProcess:
        """Launch ``build_argv(status_fd, seccomp_fd)``: bwrap's ``--json-status-fd`` and
        ``--seccomp`` (an fd to read the ``seccomp`` program from; ``None`` without one).

        ``protocol``: instead of the program's stdin and stdout (which go to /dev/null),
        ``self.stdin`` and ``self.stdout`` are two pipes whose other ends the program gets
        as the fds named in ``PALAESTRA_PROTOCOL`` ("request,reply"). bwrap's init keeps
        stdio but closes every other fd, so from inside only the program itself holds them.

        ``cgroup``: the run's memory cgroup (``build_argv`` enters it); the process owns it
        from here on and removes it in ``close``, also when the start fails.

        ``protocol_on_stdio``: the two protocol pipes are the launched program's stdin and
        stdout instead (no ``PALAESTRA_PROTOCOL``): for a client that relays its stdio to the
        real program elsewhere (``docker exec -i``), which only stdio can reach.
        """
        loop = asyncio.get_running_loop()
        theirs: list[int] = []  # the child's copies: closed here once it is started
        ours: list[int] = []  # the ends we keep: closed here only if the start fails
        status_read = status_write = filter_fd = request_write = reply_read = None
        try:
            if bubblewrap:
                status_read, status_write = _pipe(ours, theirs)
            if bubblewrap and seccomp:
                filter_fd = _filled_pipe(seccomp)
                theirs.append(filter_fd)
            child_stdout: int = subprocess.PIPE
            if protocol:
                request_read, request_write = _pipe(theirs, ours)
                reply_read, reply_write = _pipe(ours, theirs)
                if protocol_on_stdio:
                    stdin, child_stdout = request_read, reply_write
                else:
                    env = {**env, "PALAESTRA_PROTOCOL": f"{request_read},{reply_write}"}
                    stdin, child_stdout = subprocess.DEVNULL, subprocess.DEVNULL
            popen = subprocess.Popen(
                list(build_argv(status_write, filter_fd)),
                stdin=stdin,
                stdout=child_stdout,
                stderr=subprocess.PIPE if capture_stderr else subprocess.DEVNULL,
                cwd=cwd,
                env=env,
                start_new_session=True,
                pass_fds=tuple(theirs),
                preexec_fn=preexec,
            )
        except BaseException:
            for fd in ours:
                os.close(fd)
            if cgroup is not None:
                cgroup.remove()
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        if status_read is not None:
            os.set_blocking(status_read, False)
        transports: list[asyncio.BaseTransport] = []
        writer: asyncio.WriteTransport | None = None
        if request_write is not None and reply_read is not None:
            requests = os.fdopen(request_write, "wb", buffering=0)
            writer, _ = await loop.connect_write_pipe(asyncio.Protocol, requests)
            transports.append(writer)
            replies: IO[bytes] | None = os.fdopen(reply_read, "rb", buffering=0)
        else:
            replies = popen.stdout
        stdout = await _reader(loop, replies, stream_limit, transports)
        stderr = None
        if capture_stderr:
            stderr = await _reader(loop, popen.stderr, stream_limit, transports)
        process = cls(
            popen,
            status_fd=status_read,
            uid=uid,
            stdout=stdout,
            stderr=stderr,
            stdin=writer,
            cgroup=cgroup,
        )
        process._transports = transports
        return process

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)

    def kill(self) -> None:
        """SIGKILL the run and everything it started. Synchronous and idempotent."""
        self.killed = True
        if self.on_kill is not None:
            self.on_kill()
        chase = self._status_fd is None  # no pid namespace: chase the group and the uid
        if self.popen.returncode is None:
            init = self._namespace_init()
            if init is not None:
                _signal(init, signal.SIGKILL)
            else:  # killed before bwrap said who its init is: the init may be orphaned
                _signal_group(self.pid, signal.SIGKILL)
                chase = True
        if chase:
            _signal_group(self.pid, signal.SIGKILL)
            if self._uid is not None:
                kill_uid(self._uid)

    async def stop(self) -> int:
        """Kill and wait until the process is reaped; return its status."""
        self.kill()
        try:
            return await asyncio.wait_for(self.wait(), 5.0)
        except TimeoutError:  # bwrap did not go down with its namespace: take it down too
            _signal_group(self.pid, signal.SIGKILL)
            return await self.wait()

    def kill_now(self) -> None:
        """Kill and reap without the event loop (cancellation, loop shutdown): blocks briefly."""
        self.kill()
        try:
            self.popen.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            _signal_group(self.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=2.0)

    def close(self) -> None:
        """Release the pidfd, the pipes and the status fd (after the process has exited)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self._loop.remove_reader(self._pidfd)
        with contextlib.suppress(OSError):
            os.close(self._pidfd)
        if self._status_fd is not None:
            init = self._namespace_init()
            with contextlib.suppress(OSError):
                os.close(self._status_fd)
            self._status_fd = None
            if init is not None and self.popen.returncode is not None:
                _reap_orphan(self._loop, init)
        # The transports own the pipes: closing a pipe under its transport would leave the
        # event loop watching an fd number that the next run may reuse.
        for transport in self._transports:
            transport.close()
        if self.cgroup is not None:
            self.cgroup.remove(self._loop)

    def oom_kills(self) -> int:
        """Processes of the run killed at its memory cgroup's bound (read before ``close``)."""
        return self.cgroup.oom_kills() if self.cgroup is not None else 0

    def cpu_spent(self) -> float | None:
        """CPU seconds the run spent, read from its pid namespace's init (whose children's
        time includes the command's once it has reaped it), while the init is still there
        to read; ``None`` without one."""
        init = self._namespace_init()
        if init is None:
            return None
        try:
            with open(f"/proc/{init}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            return sum(int(ticks) for ticks in fields[11:15]) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None

    def _on_exit(self) -> None:
        self._loop.remove_reader(self._pidfd)
        code = self.popen.poll()
        if not self._exited.done():
            self._exited.set_result(code if code is not None else self.popen.wait())

    def _namespace_init(self) -> int | None:
        """The host pid of the pid namespace's init, from bwrap's ``--json-status-fd``."""
        if self._init_pid is None and self._status_fd is not None:
            with contextlib.suppress(BlockingIOError, OSError):
                self._status += os.read(self._status_fd, 4096)
            for line in self._status.splitlines():
                with contextlib.suppress(ValueError):
                    record = json.loads(line)
                    if isinstance(record, dict) and "child-pid" in record:
                        self._init_pid = int(record["child-pid"])
        return self._init_pid


async def _reader(
    loop: asyncio.AbstractEventLoop,
    pipe: IO[bytes] | None,
    limit: int,
    transports: list[asyncio.BaseTransport],
) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=limit, loop=loop)
    if pipe is None:
        reader.feed_eof()
        return reader
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe
    )
    transports.append(transport)
    return reader


def _pipe(read_list: list[int], write_list: list[int]) -> tuple[int, int]:
    """A pipe whose ends are recorded in ``read_list`` and ``write_list`` as it is made."""
    read, write = os.pipe()
    read_list.append(read)
    write_list.append(write)
    return read, write


def _filled_pipe(data: bytes) -> int:
    """The read end of a pipe that holds ``data`` and then ends (``data`` fits its buffer)."""
    read, write = os.pipe()
    try:
        os.write(write, data)
    except BaseException:
        os.close(read)
        raise
    finally:
        os.close(write)
    return read


def _reap_orphan(loop: asyncio.AbstractEventLoop, pid: int, tries: int = 100) -> None:
    """Reap bwrap's namespace init if it was orphaned to us.

    ``bwrap`` exits as soon as its init reports the exit status, leaving the init to be
    reaped by PID 1 (or the nearest subreaper). When that is us (``palaestra`` as PID 1 in a
    container without an init), nobody else would reap it and zombies would pile up.
    """
    try:
        reaped, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return  # not our child: PID 1 reaps it, as it should
    if not reaped and tries > 0:
        loop.call_later(0.05, _reap_orphan, loop, pid, tries - 1)


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


@dataclass(slots=True)
class Outcome:
    status: int
    stdout: bytes
    stderr: bytes
    limit: Limit | None
    cpu_spent: float | None = None
    """Measured only when the run died of a SIGKILL that we did not send."""


async def supervised(process: SandboxProcess, limits: Limits) -> Outcome:
    """``supervise``, then the process is done with whatever happened (a cancel, an error):
    killed if it still runs, and its pipes closed."""
    try:
        return await supervise(process, limits)
    finally:
        if process.returncode is None:
            process.kill_now()
        process.close()


async def supervise(process: SandboxProcess, limits: Limits) -> Outcome:
    overflow = asyncio.Event()
    readers = [
        asyncio.create_task(_read_capped(stream, limits.output_bytes, overflow))
        for stream in (process.stdout, process.stderr)
        if stream is not None
    ]
    exited = asyncio.ensure_future(process.wait())
    overflowed = asyncio.create_task(overflow.wait())
    try:
        await asyncio.wait(
            {exited, overflowed}, timeout=limits.wall_time, return_when=asyncio.FIRST_COMPLETED
        )
        limit = None
        if not exited.done():
            limit = Limit.OUTPUT if overflow.is_set() else Limit.WALL_TIME
            await process.stop()
        else:
            process.kill()  # whatever it left behind (only matters without a pid namespace)
        status = await exited
        spent = None
        if limit is None and status in (-signal.SIGKILL, 128 + signal.SIGKILL):
            spent = process.cpu_spent()  # the CPU rlimit's hard limit kills without a word
        done, _ = await asyncio.wait(readers, timeout=2.0)
        outputs = [task.result() if task in done else b"" for task in readers]
        if overflow.is_set():
            limit = Limit.OUTPUT
    finally:
        for task in (*readers, exited, overflowed):
            task.cancel()
    return Outcome(status, outputs[0], outputs[1] if len(outputs) > 1 else b"", limit, spent)


async def _read_capped(stream: asyncio.StreamReader, cap: int, overflow: asyncio.Event) -> bytes:
    data = bytearray()
    while chunk := await stream.read(2**16):
        room = cap - len(data)
        if len(chunk) > room:
            data += chunk[:room]
            overflow.set()
            break
        data += chunk
    return bytes(data)

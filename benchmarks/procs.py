"""What the benchmarks measure about processes: CPU time and memory of whole process trees.

Everything comes from the kernel: each live process's own CPU from its CPU-time clock (all its
threads, in nanoseconds), plus ``cutime + cstime`` from ``/proc/<pid>/stat`` (what it reaped from
children that already exited), so a tree's total is right across processes that start and stop
during a measurement. ``/proc``'s ``utime + stime`` alone count in clock ticks (10 ms here): a
steady window of 0.25 s over three processes read that way moves by up to 10% either way.
A ``Sampler`` thread reads the stack's CPU and the mock model's counters at a fixed interval;
the steady-state window of a run is cut from those samples.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson

TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True, slots=True)
class ProcStat:
    pid: int
    ppid: int
    cpu: float
    """Seconds of CPU: the process's own plus that of children it has reaped."""
    rss: int
    """Resident bytes now."""
    start: int
    """Start time in clock ticks after boot: with the pid, it names one process for sure."""


def process_clock(pid: int) -> int:
    """The clock id of ``pid``'s CPU time, all threads (what ``clock_getcpuclockid`` returns).

    Linux encodes it as the complemented pid shifted by 3, low bits 2 (CPUCLOCK_SCHED, the
    whole thread group); Python has ``pthread_getcpuclockid`` but not the per-process one.
    """
    return ((~pid) << 3) | 2


def read_stat(pid: int) -> ProcStat | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = raw.rsplit(b")", 1)[1].split()
    reaped = (int(fields[13]) + int(fields[14])) / TICKS
    try:
        own = time.clock_gettime_ns(process_clock(pid)) / 1e9
    except OSError:  # exited between the two reads (a zombie has no clock): its ticks then
        own = (int(fields[11]) + int(fields[12])) / TICKS
    return ProcStat(pid, int(fields[1]), own + reaped, int(fields[21]) * PAGE, int(fields[19]))


def all_stats() -> dict[int, ProcStat]:
    stats = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            stat = read_stat(int(entry.name))
            if stat is not None:
                stats[stat.pid] = stat
    return stats


def tree(roots: Iterable[int], stats: dict[int, ProcStat]) -> list[ProcStat]:
    """The roots and all their live descendants."""
    children: dict[int, list[int]] = {}
    for stat in stats.values():
        children.setdefault(stat.ppid, []).append(stat.pid)
    found, todo = [], [r for r in roots if r in stats]
    seen = set(todo)
    while todo:
        pid = todo.pop()
        found.append(stats[pid])
        for child in children.get(pid, ()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return found


def stop_processes(members: dict[int, int], grace: float = 10.0) -> int:
    """SIGTERM, then SIGKILL after ``grace`` s, the processes ``{pid: start}`` still alive.

    A pid is signalled only while it still names the same process (same start time), so a
    recycled pid is never touched. Returns how many were still alive.
    """

    def alive() -> list[int]:
        return [
            pid
            for pid, start in members.items()
            if (stat := read_stat(pid)) is not None and stat.start == start
        ]

    left = alive()
    for signum in (signal.SIGTERM, signal.SIGKILL):
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)
        deadline = time.monotonic() + grace
        while alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        if not alive():
            break
    return len(left)


def tree_usage(roots: Iterable[int]) -> tuple[float, int, int]:
    """(CPU seconds, resident bytes, process count) of the trees under ``roots`` now."""
    members = tree(roots, all_stats())
    return sum(p.cpu for p in members), sum(p.rss for p in members), len(members)


def tree_pss(roots: Iterable[int]) -> int:
    """Proportional set size of the trees under ``roots``: shared pages counted once in all.

    Summing RSS counts every page a set of forked processes shares once per process; PSS
    divides each shared page among its sharers, so the sum is the memory the stack costs.
    """
    total = 0
    for member in tree(roots, all_stats()):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{member.pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
                    break
    return total


def mock_stats(port: int) -> dict[str, float]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/stats")
        return dict(orjson.loads(connection.getresponse().read()))
    finally:
        connection.close()


@dataclass(slots=True)
class Sample:
    at: float
    done: int
    cpu: float
    rss: int
    complete: bool
    """Every root was alive (or not yet reaped): ``cpu`` covers the whole stack."""


@dataclass(slots=True)
class Sampler:
    """Samples (time, rollouts finished at the mock, stack CPU, stack RSS) every ``interval``.

    "Finished" counts the mock's second answers (the text after the tool output): a weather
    rollout ends a verify call after it, which is all that remains once that answer is sent.
    The mock's own CPU is never counted: it is not a root of the stack. The tree under the
    roots is re-read from /proc every ``rescan`` seconds (and when a root is added); in
    between only its members' stat files are read, to keep the sampler light.
    """

    mock_port: int
    roots: list[int]
    interval: float = 0.02
    rescan: float = 0.5
    samples: list[Sample] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _baseline: int = 0
    _connection: http.client.HTTPConnection | None = None
    _members: list[int] = field(default_factory=list)
    _scanned_at: float = 0.0
    _scanned_roots: int = -1

    def start(self) -> Sampler:
        self._baseline = int(mock_stats(self.mock_port)["texts"])
        self._connection = http.client.HTTPConnection("127.0.0.1", self.mock_port, timeout=10)
        self._take()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _done(self) -> int:
        assert self._connection is not None
        self._connection.request("GET", "/stats")
        return int(orjson.loads(self._connection.getresponse().read())["texts"]) - self._baseline

    def _take(self) -> None:
        now = time.perf_counter()
        roots = list(self.roots)
        if len(roots) != self._scanned_roots or now - self._scanned_at > self.rescan:
            self._members = [p.pid for p in tree(roots, all_stats())]
            self._scanned_at, self._scanned_roots = now, len(roots)
        done = self._done()
        stats = {pid: read_stat(pid) for pid in self._members}
        cpu = sum(s.cpu for s in stats.values() if s is not None)
        rss = sum(s.rss for s in stats.values() if s is not None)
        complete = all(stats.get(root) is not None for root in roots)
        self.samples.append(Sample(time.perf_counter(), done, cpu, rss, complete))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with contextlib.suppress(OSError, http.client.HTTPException):
                self._take()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._connection is not None:
            self._connection.close()

    def steady(self, total: int, low: float = 0.1, high: float = 0.9) -> dict[str, float] | None:
        """Rate and CPU per rollout between ``low`` and ``high`` of ``total`` rollouts done.

        Only samples taken while every process of the stack was there count; when the run
        ended before a sample reached ``high``, the window ends at the last such sample.
        """
        usable = [s for s in self.samples if s.complete]
        first = next((s for s in usable if s.done >= low * total), None)
        last = next((s for s in usable if s.done >= high * total), None)
        if last is None and usable:
            last = usable[-1]
        if first is None or last is None or last.done <= first.done or last.at <= first.at:
            return None
        rollouts = last.done - first.done
        return {
            "rollouts": rollouts,
            "seconds": last.at - first.at,
            "rollouts_per_s": rollouts / (last.at - first.at),
            "cpu_ms_per_rollout": (last.cpu - first.cpu) / rollouts * 1000,
        }

    def peak_rss(self) -> int:
        return max((s.rss for s in self.samples), default=0)


@dataclass(slots=True)
class Finished:
    returncode: int
    wall: float
    cpu: float
    """User + system seconds of the process and the children it reaped."""
    max_rss: int
    """Peak resident bytes (the largest of the process and its reaped children)."""
    stdout: str
    stderr: str


def run_measured(
    command: Sequence[str],
    *,
    cwd: str | Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 1200,
    on_start: list[int] | None = None,
) -> Finished:
    """Run ``command`` to its end; its CPU and peak RSS come from ``wait4``, so they are exact.

    ``on_start`` gets the child's pid appended as soon as it exists (for a sampler's roots).
    """
    started = time.perf_counter()
    out_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-{os.getpid()}-{time.time_ns()}"
    with open(f"{out_path}.out", "w+") as out, open(f"{out_path}.err", "w+") as err:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=err)
        if on_start is not None:
            on_start.append(process.pid)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                process.kill()
                pid, status, usage = os.wait4(process.pid, 0)
                break
            time.sleep(0.01)
        process.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    for suffix in (".out", ".err"):
        Path(f"{out_path}{suffix}").unlink(missing_ok=True)
    return Finished(
        process.returncode,
        wall,
        usage.ru_utime + usage.ru_stime,
        usage.ru_maxrss * 1024,
        stdout,
        stderr,
    )


def listening_addresses(pids: Iterable[int]) -> list[str]:
    """The local addresses of the TCP sockets the processes ``pids`` listen on."""
    inodes: set[str] = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in os.scandir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    target = os.readlink(fd.path)
                    if target.startswith("socket:["):
                        inodes.add(target[8:-1])
    found = []
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                parts = line.split()
                if parts[3] == "0A" and parts[9] in inodes:  # 0A: LISTEN
                    address, port = parts[1].split(":")
                    found.append(f"{_address(address, width)}:{int(port, 16)}")
    return found


def _address(hex_address: str, width: int) -> str:
    raw = bytes.fromhex(hex_address)
    # /proc prints each 32-bit word in host (little-endian) order.
    words = [raw[i : i + 4][::-1] for i in range(0, len(raw), 4)]
    packed = b"".join(words)
    if width == 8:
        return ".".join(str(b) for b in packed)
    if packed[:12] == b"\0" * 10 + b"\xff\xff":
        return "::ffff:" + ".".join(str(b) for b in packed[12:])
    if packed == b"\0" * 15 + b"\1":
        return "::1"
    if packed == b"\0" * 16:
        return "::"
    return packed.hex()


def loopback_only(addresses: Iterable[str]) -> bool:
    return all(
        a.startswith(("127.", "::ffff:127.", "[::1]")) or a.rsplit(":", 1)[0] == "::1"
        for a in addresses
    )

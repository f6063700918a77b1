"""``Sandbox``: run a command or a Python snippet isolated, under limits, and report how it ended.

::

    sandbox = Sandbox(Limits(wall_time=5))
    result = await sandbox.run_python("print(6 * 7)")
    result.stdout      # "42\\n"
    result.limit       # None, or the Limit it ran into (Limit.MEMORY, Limit.WALL_TIME, ...)

Every run gets a fresh private work dir (``/work`` inside, also the current directory), a
clean environment, no network, and is gone without a trace when ``run`` returns.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Literal

from palaestra.errors import ConfigError, SandboxLimitExceeded
from palaestra.sandbox import isolation, seccomp
from palaestra.sandbox.cgroup import MemoryCgroups, find_memory_cgroups
from palaestra.sandbox.limits import Limit, Limits
from palaestra.sandbox.process import SandboxProcess, supervise
from palaestra.sandbox.result import SandboxResult
from palaestra.sandbox.session import PythonSession
from palaestra.sandbox.workdir import (
    MAX_FILES_OUT,
    WorkDir,
    check_reachable,
    sweep_stale,
    tmpfs_problem,
)

Isolation = Literal["auto", "bubblewrap", "rlimits"]
DEBIAN_PYTHON = "/usr/bin/python3"
_MB = 1024 * 1024
log = logging.getLogger("palaestra.sandbox")


class SandboxUnavailable(ConfigError):
    """``isolation="bubblewrap"`` was asked for and bubblewrap cannot run here."""


class Sandbox:
    """Runs untrusted code: bubblewrap + a throw-away uid + rlimits (see ``isolation``).

    ``python`` must be an interpreter the sandbox uid can reach: Debian's ``/usr/bin/python3``
    is; one under ``/root`` (pyenv) is not. ``read_only`` adds host paths (e.g. a
    world-readable virtualenv) to the sandbox, read-only at the same place. ``isolation``:
    ``"auto"`` uses bubblewrap when it works and otherwise warns and falls back to rlimits;
    ``"bubblewrap"`` refuses to run without it.
    """

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        python: str = DEBIAN_PYTHON,
        isolation: Isolation = "auto",
        root_dir: str | Path | None = None,
        read_only: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.limits = limits or Limits()
        self.python = python
        self.root_dir = Path(root_dir) if root_dir is not None else None
        self.read_only = tuple(read_only)
        self.env = dict(env or {})
        self._requested = isolation
        self._mode: str | None = None
        self._bwrap: str | None = None
        self._bounded_disk = False
        self._cgroups: MemoryCgroups | None = None
        self._uids = isolation_uids()
        self.runs = 0
        """Runs and session cells finished (read by ``/metrics``, with ``limit_hits``)."""
        self.limit_hits: Counter[str] = Counter()
        """Runs and cells that ran into a sandbox rule, by ``Limit``."""

    @property
    def isolation(self) -> str:
        """``"bubblewrap"`` or ``"rlimits"`` (decided, with a trial run, on first use)."""
        if self._mode is None:
            if self._uids is not None:
                check_reachable(self.root_dir)
            sweep_stale(self.root_dir)
            bwrap = isolation.tools()["bwrap"]
            problem = "isolation='rlimits' was asked for"
            if self._requested != "rlimits":
                uid = self._uids.acquire() if self._uids else None
                try:
                    problem = isolation.bubblewrap_problem(bwrap, uid) or ""
                finally:
                    if self._uids and uid is not None:
                        self._uids.release(uid)
            if self._uids is not None:
                disk_problem = tmpfs_problem(self.root_dir)
                if disk_problem is not None:
                    log.warning("sandbox: no bound on the disk a run fills: %s", disk_problem)
                self._bounded_disk = disk_problem is None
                self._cgroups = self._memory_cgroups()
            if not problem:
                self._mode, self._bwrap = "bubblewrap", bwrap
            elif self._requested == "bubblewrap":
                raise SandboxUnavailable(f"bubblewrap cannot run here: {problem}")
            else:
                isolation.warn_fallback(problem)
                self._mode = "rlimits"
        return self._mode

    async def run(
        self,
        command: Sequence[str],
        *,
        files: Mapping[str, str | bytes] | None = None,
        stdin: str | bytes | None = None,
        collect: Sequence[str] = (),
        max_files: int = MAX_FILES_OUT,
        limits: Limits | None = None,
        env: Mapping[str, str] | None = None,
    ) -> SandboxResult:
        """Run ``command`` in a fresh work dir holding ``files``; return how it ended.

        ``collect``: glob patterns (relative to the work dir) of files to return in
        ``result.files`` (regular files only, each cut at ``limits.file_size_mb``). More
        than ``max_files`` of them raises ``SandboxLimitExceeded`` (``Limit.FILES_OUT``,
        a ``sandbox_limit`` failure in a rollout) naming the patterns, the count and the
        limit: raise ``max_files`` to collect more. ``env`` adds variables to the clean
        environment.
        """
        limits = limits or self.limits
        mode = self.isolation
        uid = self._uids.acquire() if self._uids else None
        started = time.perf_counter()
        process: SandboxProcess | None = None
        try:
            work = self.work_dir(uid, limits)
        except BaseException:
            if self._uids and uid is not None:
                self._uids.release(uid)
            raise
        try:
            work.write(files or {})
            with _stdin_file(stdin) as stdin_file:
                process = await self._launch(command, work, uid, limits, env, stdin_file)
            outcome = await supervise(process, limits)
            try:
                gathered = (
                    work.collect(collect, limits.file_size_mb * _MB, max_files) if collect else {}
                )
            except SandboxLimitExceeded:
                self.counted(Limit.FILES_OUT)
                raise
            disk_full = work.full()
            memory_full = process.oom_kills() > 0
        finally:
            if process is not None:
                if process.returncode is None:  # cancelled: no awaiting from here on
                    process.kill_now()
                process.close()
            work.remove()
            if self._uids and uid is not None:
                self._uids.release(uid)
        result = SandboxResult.of(
            outcome,
            mode,
            duration=time.perf_counter() - started,
            files=gathered,
            limits=limits,
            disk_full=disk_full,
            memory_full=memory_full,
        )
        self.counted(result.limit)
        return result

    def counted(self, limit: Limit | None) -> None:
        """Count one finished run or cell, and the rule it ran into."""
        self.runs += 1
        if limit is not None:
            self.limit_hits[str(limit)] += 1

    async def run_python(
        self,
        code: str,
        *,
        files: Mapping[str, str | bytes] | None = None,
        stdin: str | bytes | None = None,
        collect: Sequence[str] = (),
        max_files: int = MAX_FILES_OUT,
        limits: Limits | None = None,
        env: Mapping[str, str] | None = None,
    ) -> SandboxResult:
        """Run ``code`` as ``main.py`` in the work dir with the sandbox's interpreter
        (``collect`` and ``max_files`` as for ``run``)."""
        files = dict(files or {})
        if "main.py" in files:
            raise ValueError("files must not contain main.py: the code is written there")
        files["main.py"] = code
        command = [self.python, "-u", "-B", "-E", "-s", "main.py"]
        return await self.run(
            command,
            files=files,
            stdin=stdin,
            collect=collect,
            max_files=max_files,
            limits=limits,
            env=env,
        )

    async def session(
        self,
        *,
        files: Mapping[str, str | bytes] | None = None,
        limits: Limits | None = None,
        idle_ttl: float = 600.0,
    ) -> PythonSession:
        """Start a long-lived Python session (globals kept across ``run`` calls)."""
        session = PythonSession(self, limits or self.limits, idle_ttl)
        await session.start(dict(files or {}))
        return session

    def work_dir(self, uid: int | None, limits: Limits) -> WorkDir:
        """A fresh work dir for one run (a tmpfs of ``limits.disk_mb`` when we may mount)."""
        return WorkDir(self.root_dir, uid, limits.disk_mb if self._bounded_disk else None)

    def environment(self, work_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The clean environment of a run: nothing of ours leaks in."""
        inside = isolation.WORK_DIR if self.isolation == "bubblewrap" else str(work_dir)
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": inside,
            "TMPDIR": "/tmp" if self.isolation == "bubblewrap" else inside,
            "LANG": "C.UTF-8",
            "PYTHONIOENCODING": "utf-8",
        }
        env.update(self.env)
        env.update(extra or {})
        return env

    async def _launch(
        self,
        command: Sequence[str],
        work: WorkDir,
        uid: int | None,
        limits: Limits,
        env: Mapping[str, str] | None,
        stdin: int,
        *,
        capture_stderr: bool = True,
        stream_limit: int = 2**16,
        protocol: bool = False,
    ) -> SandboxProcess:
        bubblewrap = self.isolation == "bubblewrap"
        cgroup = None
        if self._cgroups is not None:
            # Files of the run's tmpfs are its pages too: the bound is memory and disk.
            tmpfs_mb = limits.disk_mb * (1 if work.bounded else 2)  # else /tmp, /dev/shm
            cgroup = self._cgroups.create((limits.memory_mb + tmpfs_mb) * _MB)
        join = cgroup.join_argv() if cgroup is not None else []

        def argv(status_fd: int | None, seccomp_fd: int | None) -> list[str]:
            bwrap_args = [] if status_fd is None else ["--json-status-fd", str(status_fd)]
            if seccomp_fd is not None:
                bwrap_args += ["--seccomp", str(seccomp_fd)]
            return isolation.launch_argv(
                command,
                limits=limits,
                work_dir=work.path,
                uid=uid,
                bwrap=self._bwrap if bubblewrap else None,
                bwrap_args=bwrap_args,
                read_only=self.read_only,
                tmp_dir=work.tmp,
                shm_dir=work.shm,
                join=join,
            )

        return await SandboxProcess.start(
            argv,
            bubblewrap=bubblewrap,
            uid=uid,
            cwd=str(work.path),
            env=self.environment(work.path, env),
            stdin=stdin,
            stream_limit=stream_limit,
            preexec=None if isolation.tools()["prlimit"] else limits.apply,
            capture_stderr=capture_stderr,
            seccomp=seccomp.program(memfd=cgroup is not None),
            protocol=protocol,
            cgroup=cgroup,
        )

    def _memory_cgroups(self) -> MemoryCgroups | None:
        """Per-run memory cgroups if they can be made here; otherwise say what is lost."""
        found = find_memory_cgroups()
        if isinstance(found, str):
            log.warning(
                "sandbox: no memory cgroup (%s): memory_mb bounds each process's address "
                "space only, and memfd_create is refused",
                found,
            )
            return None
        found.sweep()
        return found


def isolation_uids() -> isolation.UidPool | None:
    """Throw-away uids when we are root (then every run drops to one), else ``None``."""
    return isolation.UidPool() if isolation.is_root() else None


@contextlib.contextmanager
def _stdin_file(data: str | bytes | None) -> Iterator[int]:
    """The run's stdin: an unlinked temporary file holding ``data``, or /dev/null."""
    if data is None:
        with open("/dev/null", "rb") as null:
            yield null.fileno()
        return
    with tempfile.TemporaryFile() as file:
        file.write(data.encode() if isinstance(data, str) else data)
        file.flush()
        file.seek(0)
        yield file.fileno()

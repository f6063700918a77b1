"""What the Harbor environment does in a box besides the agent's tools: stage a folder, run the
tests, read what they left.

Files go into a box through the box (a ``tar`` run in it as root, the archive on its stdin),
never by writing under ``Box.root`` from the host: the agent had the box before, and a
``/tests`` or ``/logs`` it made a symlink would otherwise point a host write anywhere. For the
same reason the reward files are read from the host one path component at a time with
``O_NOFOLLOW`` (``read_in_box``): a symlink the box holds is never followed on the host.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import stat
import subprocess
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

from palaestra.errors import InvalidTask, SandboxFailure
from palaestra.sandbox import Limit, Limits
from palaestra.sandbox.machines.provider import Box, Launch
from palaestra.sandbox.process import SandboxProcess, supervised
from palaestra.wire.harbor import HarborTask, StepConfig

READ_CAP = 1 << 20
"""Bytes of a reward file read (a reward is a number or a small JSON object)."""
STAGE_TIMEOUT = 120.0


class AgentView(Box):
    """The rollout's box as the agent's machine sees it: commands run as ``[agent] user`` in
    ``[environment] workdir`` with ``[environment] env`` unless a call says otherwise (its
    ``image`` says so too, for the editor's new files), and ``close`` leaves the box open:
    the environment closes it after the tests ran in it."""

    def __init__(
        self, box: Box, *, user: str | None, workdir: str | None, env: Mapping[str, str]
    ) -> None:
        self.box = box
        self.root = box.root
        self.image = replace(
            box.image,
            user=user or box.image.user,
            workdir=workdir or box.image.workdir,
            env={**box.image.env, **env},
        )
        self._env = dict(env)

    async def spawn(self, argv: Sequence[str], how: Launch) -> SandboxProcess:
        return await self.box.spawn(
            argv,
            replace(
                how,
                user=how.user or self.image.user,
                cwd=how.cwd or self.image.workdir,
                env={**self._env, **(how.env or {})},
            ),
        )

    async def seal(self) -> None:
        await self.box.seal()

    async def close(self) -> None:
        """Nothing: the box outlives the agent's machine (the tests run in it next)."""


def agent_view(box: Box, task: HarborTask, step: StepConfig | None) -> AgentView:
    """``box`` as the agent's commands (and its MCP servers) run in it: as ``[agent] user``
    (the step's, else the task's), in ``[environment] workdir``, with its env."""
    environment = task.config.environment
    said = step.agent.user if step is not None else None
    user = said if said is not None else task.config.agent.user
    return AgentView(
        box,
        user=None if user is None else str(user),
        workdir=environment.workdir,
        env=environment.env,
    )


@dataclass(frozen=True, slots=True)
class Ran:
    """A command run in a box: its exit status (None: it ran past its time) and output."""

    status: int | None
    output: bytes


async def run(
    box: Box,
    command: str,
    *,
    timeout: float,
    user: str | None = None,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    stdin: int = subprocess.DEVNULL,
) -> Ran:
    """``bash -c command`` in ``box``, bounded by ``timeout`` seconds; its stdout then stderr
    (each up to 1 MB). A launch that fails is a ``SandboxFailure`` (the box, not the task)."""
    argv = ["/bin/bash", "--noprofile", "--norc", "-c", command]
    try:
        process = await box.launch(argv, stdin=stdin, user=user, cwd=cwd, env=env)
    except SandboxFailure:
        raise
    except (OSError, RuntimeError) as error:
        raise SandboxFailure(f"cannot run a command in the machine: {error}") from error
    limits = Limits(wall_time=timeout, output_bytes=READ_CAP)
    outcome = await supervised(process, limits)
    if outcome.limit is Limit.WALL_TIME:
        return Ran(None, outcome.stdout + outcome.stderr)
    return Ran(outcome.status, outcome.stdout + outcome.stderr)


class BoxRefused(SandboxFailure):
    """A command ran in the box and failed, or overran: the box's own state stopped it (a file
    where a directory goes, a directory that cannot be removed, a full disk), which the agent
    may have made. Unlike a box in which no command can run at all, this is not the
    infrastructure's: the Harbor environment scores it as the task's failure."""


async def stage(box: Box, source: Path, target: str) -> None:
    """Put a copy of the host folder ``source`` at ``target`` in ``box`` (whatever was there
    before is removed first), owned by root, modes kept. One command in the box, as root, the
    archive streamed to it from a temporary file (never held in memory); ``BoxRefused`` if the
    command fails, ``SandboxFailure`` if it cannot run."""
    quoted = _quoted(target)
    command = f"rm -rf {quoted} && mkdir -p {quoted} && tar -x --no-same-owner -C {quoted}"
    with tempfile.TemporaryFile() as archive:
        _tar(source, archive)
        archive.seek(0)
        ran = await run(
            box, command, timeout=STAGE_TIMEOUT, user="root", cwd="/", stdin=archive.fileno()
        )
    if ran.status != 0:
        raise BoxRefused(
            f"cannot copy {source.name}/ into the machine at {target}: {_last_line(ran)}"
        )


async def make_own(box: Box, top: str, directory: str, owner: str) -> None:
    """Make ``top`` anew in ``box``: whatever it was (a directory, a file, a symlink) removed,
    then a directory owned by root, and ``directory`` below it owned by ``owner`` (a user, or
    ``user:group``, of the image), neither writable by anyone else. ``/logs`` for the
    verifier: what the agent left there cannot point its writes elsewhere, and no other user
    of the box can write its reward. ``BoxRefused`` if it cannot be done."""
    if not directory.startswith(top.rstrip("/") + "/"):
        raise ValueError(f"{directory} is not below {top}")
    first, below = _quoted(top), _quoted(directory)
    command = (
        f"rm -rf {first} && mkdir -m 0755 {first} && mkdir -p -m 0755 {below} && "
        f"chown -- {shlex.quote(owner)} {below}"
    )
    ran = await run(box, command, timeout=STAGE_TIMEOUT, user="root", cwd="/")
    if ran.status != 0:
        raise BoxRefused(f"cannot make {top} anew in the machine: {_last_line(ran)}")


def read_in_box(root: Path, path: str) -> bytes | None:
    """The first ``READ_CAP`` bytes of the regular file ``path`` (absolute, in the box) under
    the box's ``root``, never following a symlink; None when it is missing, or is not a
    regular file."""
    parts = [part for part in path.split("/") if part]
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    descriptors: list[int] = []
    try:
        current = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        descriptors.append(current)
        for part in parts[:-1]:
            current = os.open(part, flags | os.O_DIRECTORY, dir_fd=current)
            descriptors.append(current)
        current = os.open(parts[-1], flags | os.O_NONBLOCK, dir_fd=current)
        descriptors.append(current)
        if not _regular(current):
            return None
        with os.fdopen(os.dup(current), "rb") as file:
            return file.read(READ_CAP)
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
            return None
        raise
    finally:
        for descriptor in descriptors:
            with contextlib.suppress(OSError):
                os.close(descriptor)


def _regular(descriptor: int) -> bool:
    return stat.S_ISREG(os.fstat(descriptor).st_mode)


def _tar(source: Path, archive: IO[bytes]) -> None:
    """``source``'s children written into ``archive`` as a tar (file contents copied in
    chunks), owned by root; an entry that is no file, directory or link is refused
    (``InvalidTask``: the task folder changed since it was checked at load)."""

    def owned_by_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
        if not (info.isreg() or info.isdir() or info.issym() or info.islnk()):
            raise InvalidTask(f"{source / info.name}: not a file, directory or link: refused")
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    with tarfile.open(fileobj=archive, mode="w") as tar:
        for child in sorted(source.iterdir()):
            tar.add(child, arcname=child.name, filter=owned_by_root)
    archive.flush()


def _quoted(path: str) -> str:
    if not path.startswith("/") or "'" in path:
        raise ValueError(f"not an absolute path to quote: {path!r}")
    return f"'{path}'"


def _last_line(ran: Ran) -> str:
    lines = ran.output.decode(errors="replace").strip().splitlines()
    if ran.status is None:
        return "it did not finish in time"
    return lines[-1] if lines else f"exit status {ran.status}"

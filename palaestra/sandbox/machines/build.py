"""The ``rootfs`` builder: a Dockerfile's steps as cached directory layers.

Each step that changes files (``RUN``, ``COPY``/``ADD``, ``WORKDIR``) runs over a kernel
overlay of the layers so far with a fresh directory on top, and that directory, once the
step succeeded, is the step's layer. Steps that only change what later commands see
(``ENV``, ``ARG``, ``USER``) make no layer. A step's key covers its parent's key, its text,
the state it runs in (environment, user, working directory) and, for a copy, the digest of
the files it copies: the second build of a folder finds every layer and runs nothing.

A ``RUN`` runs as the step's user (real root for the image's ``root``: ``apt-get`` needs it)
under bubblewrap with no network at all, ``/proc`` (the kernel's settings read-only),
``/dev``, the build's memory cgroup and Docker's default capabilities (``inside``); the
step's overlay is mounted ``nosuid,nodev`` on the host, where only root reaches it. A
``COPY`` runs ``cp`` inside the image too, from a read-only view of the copied files, so the
image's own symbolic links are resolved inside the image and never lead a root process on
the host anywhere. A step that fails, or a build over its time budget, raises
``SandboxFailure`` naming the step, with the end of its output. Work in progress holds a
lease (``leases``), so a killed build leaves nothing that the next provider does not reap.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import secrets
import shlex
import shutil
import stat
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from palaestra.errors import SandboxFailure
from palaestra.sandbox import seccomp
from palaestra.sandbox.limits import Limit, Limits
from palaestra.sandbox.machines import dockerfile, inside, leases
from palaestra.sandbox.machines.cgroups import BoxCgroups, join_argv
from palaestra.sandbox.machines.dockerfile import Instruction
from palaestra.sandbox.machines.layers import (
    LayerStore,
    extract,
    key_of,
    mount_overlay,
    tar_identity,
)
from palaestra.sandbox.process import SandboxProcess, supervised

_BOOKWORM = ("debian:bookworm-slim", "debian:bookworm", "debian:12-slim", "debian:12")
_TRIXIE = ("debian:trixie-slim", "debian:trixie", "debian:13-slim", "debian:13")
BASE_IMAGES = {**dict.fromkeys(_BOOKWORM, "bookworm"), **dict.fromkeys(_TRIXIE, "trixie")}
"""What ``FROM`` may name, and the offline Debian base it is (``images.base_tar``): bookworm
by default, trixie for tasks that need Python 3.13 (``images.TRIXIE``)."""
BUILD_MEMORY_MB = 4096
BUILD_PROCESSES = 4096
OUTPUT_LINES = 30
"""Lines of a failed step's output kept in its error."""
_COPY_MOUNT = "/dev/.palaestra-copy"
"""Where a ``COPY``'s files appear during its step (bubblewrap's own ``/dev``: no trace)."""


@dataclass(slots=True)
class State:
    """What the steps so far left in force."""

    key: str = ""
    chain: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    args: dict[str, str] = field(default_factory=dict)
    workdir: str = "/"
    user: str = "root"
    ran: int = 0
    """Steps run by this build (0 when every layer was found in the cache)."""

    def variables(self) -> dict[str, str]:
        return {**self.args, **self.env}

    def context(self) -> str:
        return json.dumps([self.env, self.args, self.workdir, self.user], sort_keys=True)


class Builder:
    """Builds one Dockerfile folder into the ``store``; ``base`` gives the base tar. Steps
    run in ``work`` (their upper directories, on the store's file system) and are mounted
    (``nosuid,nodev``) under ``mounts`` (the provider's runtime directory, which a step's
    non-root user reaches through ``inside.BOX_GROUP`` and no other user of the host)."""

    def __init__(
        self,
        store: LayerStore,
        work: Path,
        base: Callable[[], Path],
        cgroups: BoxCgroups,
        mounts: Path,
        suites: Callable[[str], Path] | None = None,
    ) -> None:
        self.store = store
        self.work = work
        self.mounts = mounts
        self.base = base
        self.suites = suites
        """The base tar of a suite other than bookworm (``base`` is bookworm's)."""
        self.cgroups = cgroups

    async def build(self, context: Path, deadline: float) -> State:
        path = context / "Dockerfile"
        if not path.is_file():
            raise SandboxFailure(f"{context} has no Dockerfile")
        instructions = dockerfile.read(path)
        state = State()
        for number, instruction in enumerate(instructions, 1):
            if time.monotonic() > deadline:
                raise SandboxFailure(f"the build of {context} ran over its time budget")
            await self._step(instruction, state, context, deadline, number, len(instructions))
        return state

    async def _step(
        self,
        instruction: Instruction,
        state: State,
        context: Path,
        deadline: float,
        number: int,
        total: int,
    ) -> None:
        keyword = instruction.keyword
        variables = state.variables()
        if keyword == "FROM":
            await self._from(instruction, state, deadline)
        elif keyword == "ARG":
            for name, value in dockerfile.pairs(instruction, variables):
                state.args[name] = value or state.args.get(name, "")
        elif keyword == "ENV":
            state.env.update(dockerfile.pairs(instruction, variables))
        elif keyword == "USER":
            state.user = dockerfile.substitute(instruction.text.strip(), variables) or "root"
        elif keyword == "WORKDIR":
            target = dockerfile.substitute(instruction.text.strip(), variables)
            state.workdir = str(PurePosixPath("/", state.workdir, target))
            step = [state.key, "WORKDIR", state.workdir]
            await self._layer(
                step,
                state,
                ["mkdir", "-p", state.workdir],
                "root",
                deadline,
                f"step {number}/{total} ({instruction.where()}) WORKDIR",
            )
        elif keyword == "RUN":
            command = instruction.exec_form() or ["/bin/sh", "-c", instruction.text]
            step = [state.key, "RUN", json.dumps(command), state.context()]
            label = f"step {number}/{total} ({instruction.where()}) RUN {instruction.text}"
            await self._layer(step, state, command, state.user, deadline, label)
        elif keyword in ("COPY", "ADD"):
            await self._copy(instruction, state, context, deadline, f"step {number}/{total}")
        # LABEL, EXPOSE, CMD, ENTRYPOINT, ...: read and ignored (see ``dockerfile``).

    async def _from(self, instruction: Instruction, state: State, deadline: float) -> None:
        words = dockerfile.substitute(instruction.text, state.args).split()
        image = words[0] if words else ""
        suite = BASE_IMAGES.get(image)
        if suite is None or (suite != "bookworm" and self.suites is None):
            raise SandboxFailure(
                f"{instruction.where()}: image {image} cannot be had on this machine: only "
                "debian:bookworm-slim and debian:trixie-slim are built offline"
            )
        if suite == "bookworm" or self.suites is None:
            tar = await asyncio.to_thread(self.base)
        else:
            tar = await asyncio.to_thread(self.suites, suite)
        state.key = key_of("base", tar_identity(tar))
        name = self.store.name(state.key)
        if not self.store.has(name):
            async with self.store.locked(name, deadline):
                if not self.store.has(name):
                    scratch = self.store.scratch(name)
                    try:
                        await asyncio.to_thread(extract, tar, scratch)
                        self.store.commit(scratch, name)
                    except BaseException:
                        shutil.rmtree(scratch, ignore_errors=True)
                        raise
        state.chain = [name]
        state.args = {}  # an ARG before FROM is for FROM only

    async def _copy(
        self, instruction: Instruction, state: State, context: Path, deadline: float, label: str
    ) -> None:
        allowed = ("chown", "chmod")
        options, words = dockerfile.flags(instruction, allowed)
        if len(words) < 2:
            raise instruction.refuse("needs a source and a destination")
        variables = state.variables()
        *sources, target = (dockerfile.substitute(word, variables) for word in words)
        files = _sources(instruction, context, sources)
        digest = _digest(context, files)
        step = [state.key, instruction.keyword, instruction.text, digest, state.context()]
        destination = str(PurePosixPath("/", state.workdir, target))
        if target.endswith("/"):
            destination += "/"
        script = _copy_script(files, context, destination, options, into=len(files) > 1)
        await self._layer(
            step,
            state,
            ["/bin/sh", "-c", script],
            "root",
            deadline,
            f"{label} ({instruction.where()}) {instruction.keyword} {instruction.text}",
            copy_from=context,
        )

    async def _layer(
        self,
        step: list[str],
        state: State,
        command: list[str],
        user: str,
        deadline: float,
        label: str,
        copy_from: Path | None = None,
    ) -> None:
        """Find the step's layer in the store, or run ``command`` over the chain to make it."""
        key = key_of(*step)
        name = self.store.name(key)
        if not self.store.has(name):
            async with self.store.locked(name, deadline):
                if not self.store.has(name):
                    await self._run(name, state, command, user, deadline, label, copy_from)
                    state.ran += 1
        state.key = key
        if not _empty_layer(self.store.path(name)):
            state.chain.append(name)

    async def _run(
        self,
        name: str,
        state: State,
        command: list[str],
        user_spec: str,
        deadline: float,
        label: str,
        copy_from: Path | None,
    ) -> None:
        """Run one step in a leased work directory; its upper dir becomes layer ``name``."""
        box = f"build-{secrets.token_hex(6)}"
        directory = self.work / box
        merged = self.mounts / box  # reachable by a step's non-root user, unlike the store
        lease = leases.Lease(
            box=box, directory=str(directory), mounts=[str(merged)], also=[str(merged)]
        )
        cgroups = self.cgroups.create(BUILD_MEMORY_MB, BUILD_PROCESSES, float(os.cpu_count() or 1))
        lease.cgroups = [str(path) for path in cgroups]
        lease.write(self.work)
        try:
            upper = directory / "upper"
            for part in (upper, directory / "work"):
                part.mkdir(parents=True)
            merged.mkdir(mode=0o700)
            await asyncio.to_thread(
                mount_overlay, self.store.layers, state.chain, upper, directory / "work", merged
            )
            user = inside.resolve_user(merged, user_spec)
            env = inside.environment(user, state.variables(), None)
            outcome = await _execute(
                merged,
                user,
                state.workdir,
                env,
                command,
                deadline,
                join_argv(cgroups),
                copy_from,
            )
            leases.unmount(merged)
            if outcome is None:
                raise SandboxFailure(f"{label}: the build ran over its time budget")
            status, output = outcome
            if status != 0:
                raise SandboxFailure(f"{label}: failed with exit status {status}:\n{output}")
            self.store.commit(upper, name)
        finally:
            await asyncio.to_thread(leases.tear_down, lease, self.work)


async def _execute(
    root: Path,
    user: inside.User,
    workdir: str,
    env: dict[str, str],
    command: list[str],
    deadline: float,
    join: list[str],
    copy_from: Path | None,
) -> tuple[int, str] | None:
    """Run a build command in ``root``: its status and the end of its output (``None`` when
    it ran past the deadline)."""
    cwd = workdir if os.path.isdir(root / workdir.lstrip("/")) else "/"
    extra = ["--ro-bind", str(copy_from), _COPY_MOUNT] if copy_from is not None else []

    def build_argv(status_fd: int | None, seccomp_fd: int | None) -> list[str]:
        return inside.argv(
            command,
            root=root,
            user=user,
            cwd=cwd,
            env=env,
            join=join,
            status_fd=status_fd,
            seccomp_fd=seccomp_fd,
            binds=extra,
        )

    process = await SandboxProcess.start(
        build_argv,
        bubblewrap=True,
        uid=None,
        cwd="/",
        env={},
        stdin=subprocess.DEVNULL,
        seccomp=seccomp.program(memfd=bool(join)),
    )
    budget = max(1.0, deadline - time.monotonic())
    outcome = await supervised(process, Limits(wall_time=budget, output_bytes=4 << 20))
    if outcome.limit is Limit.WALL_TIME:
        return None
    text = (outcome.stdout + outcome.stderr).decode(errors="replace")
    tail = "\n".join(text.rstrip().splitlines()[-OUTPUT_LINES:])
    return outcome.status, tail


def _sources(instruction: Instruction, context: Path, sources: list[str]) -> list[Path]:
    """The context files a ``COPY``/``ADD`` names (globs expanded), all inside the context."""
    found: list[Path] = []
    base = context.resolve()
    for source in sources:
        if "://" in source or source.startswith("git@"):
            raise instruction.refuse(f"of a URL ({source}) is not supported: no network here")
        matches = (
            sorted(base.glob(source.lstrip("/")))
            if _is_glob(source)
            else [base / source.lstrip("/")]
        )
        for match in matches:
            resolved = Path(os.path.normpath(match))
            if resolved != base and base not in resolved.parents:
                raise instruction.refuse(f"source {source} is outside the build context")
            if not resolved.exists() and not resolved.is_symlink():
                raise instruction.refuse(f"source {source} is not in the build context")
            if instruction.keyword == "ADD" and _is_archive(resolved):
                raise instruction.refuse(
                    f"of an archive ({source}) is not supported: COPY it and RUN tar"
                )
            found.append(resolved)
        if not matches:
            raise instruction.refuse(f"source {source} matches no file of the build context")
    return found


def _is_glob(text: str) -> bool:
    return any(char in text for char in "*?[")


def _is_archive(path: Path) -> bool:
    return path.is_file() and any(
        path.name.endswith(suffix) for suffix in (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")
    )


def _digest(context: Path, files: list[Path]) -> str:
    """Paths, modes and contents of the copied files (a directory: everything under it)."""
    digest = hashlib.sha256()
    base = context.resolve()
    for top in files:
        walk = [top] if not top.is_dir() or top.is_symlink() else sorted(top.rglob("*"))
        for path in [top, *walk] if top.is_dir() else walk:
            info = path.lstat()
            digest.update(f"{path.relative_to(base)}\0{info.st_mode:o}\0".encode())
            if stat.S_ISLNK(info.st_mode):
                digest.update(os.readlink(path).encode())
            elif stat.S_ISREG(info.st_mode):
                with open(path, "rb") as handle:
                    for chunk in iter(lambda: handle.read(1 << 20), b""):
                        digest.update(chunk)
    return digest.hexdigest()


def _copy_script(
    files: list[Path], context: Path, destination: str, options: dict[str, str], *, into: bool
) -> str:
    """The shell script that copies ``files`` (seen at ``_COPY_MOUNT``) to ``destination``
    inside the image, Docker's way: a directory's contents, not the directory; a file into
    a destination that is (or ends with ``/``, or takes several files) a directory. What it
    copies belongs to root, or to ``--chown``'s user (named as the image's files name it)."""
    base = context.resolve()
    quote = shlex.quote
    owner = quote(options.get("chown") or "0:0")
    mode = options.get("chmod")
    target = destination.rstrip("/") or "/"
    lines = ["set -e"]

    def settle(path: str) -> None:
        lines.append(f"chown -hR {owner} {path}")
        if mode:
            lines.append(f"chmod -R {quote(mode)} {path}")

    for path in files:
        source = quote(f"{_COPY_MOUNT}/{path.relative_to(base).as_posix()}")
        if path.is_dir() and not path.is_symlink():
            lines.append(f"mkdir -p {quote(target)}")
            lines.append(f"cp -R --preserve=mode,timestamps,links {source}/. {quote(target)}/")
            for child in sorted(path.iterdir()):
                settle(quote(f"{target.rstrip('/')}/{child.name}"))
            continue
        if into or destination.endswith("/"):
            name = quote(f"{target.rstrip('/')}/{path.name}")
            lines.append(f"mkdir -p {quote(target)}")
            lines.append(f"cp -P --preserve=mode,timestamps {source} {name}")
            settle(name)
        else:
            inner = quote(f"{target}/{path.name}")
            lines.append(
                f"if [ -d {quote(target)} ]; then dest={inner}; else "
                f'mkdir -p "$(dirname {quote(target)})"; dest={quote(target)}; fi'
            )
            lines.append(f'cp -P --preserve=mode,timestamps {source} "$dest"')
            settle('"$dest"')
    return "\n".join(lines)


def _empty_layer(path: Path) -> bool:
    """Whether a layer changed nothing (then it is left out of the chain: fewer lowers).

    A ``mkdir -p`` of a directory that exists still leaves its parents' copies in the upper
    dir when they had to be created; those count as changes."""
    with contextlib.suppress(OSError), os.scandir(path) as entries:
        return next(entries, None) is None
    return False

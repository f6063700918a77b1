"""The ``docker`` provider: task images built and boxes run by a local Docker daemon.

It drives the daemon through the ``docker`` CLI (asynchronous subprocesses), not a Python SDK
nor the HTTP API: no dependency, the CLI does the build context's tar and the exec stream's
framing, and Podman's CLI takes the same commands (untested here: ``docker=`` names the
CLI). A call costs a client start (~50 ms), small beside a container's start.

- ``build``: ``docker build --network none`` with the classic builder (``DOCKER_BUILDKIT=0``:
  local images only, nothing pulled), tagged ``palaestra-task:<digest12>`` and labelled with
  the folder's digest and the ids of its ``FROM`` images; a tag whose labels match is reused
  (a changed folder or a new base image builds again). Every ``FROM`` image must already
  be in the daemon: the offline base (``images.docker_base``) provides ``debian:bookworm-slim``
  and ``debian:bookworm``; any other fails the build with one line naming it.
- ``start``: ``docker run -d --network none`` with memory, CPU and process bounds; its init
  (pid 1) is the image's ``/bin/sh`` running ``INIT``, which reaps what commands orphan and
  outlives every other process of the box: a shell whose command ignored its timeout kills
  everything in the box but pid 1, and the box stays usable. Every container
  carries the labels ``palaestra.box=1`` and ``palaestra.lease=<pid>:<start time>:<pid
  namespace>`` (its owner), set by the daemon as it creates the container, so no box exists
  without its lease; ``reap`` removes the boxes of owners that are gone (also after
  ``kill -9``), never a container without these labels nor one whose owner lives. A box
  never closed is removed when its object is collected or its process exits
  (``weakref.finalize``; a forked child's exit leaves it), so only a process that could not
  exit cleanly leaves a container for ``reap``.
- ``Box.root`` is the container's merged overlay directory and commands' leftovers are found
  through the host's ``/proc``: the provider needs a *local* daemon (same kernel, same host
  filesystem), and root to read and write that directory.
- ``BoxSpec.storage_mb``: on a daemon whose overlay2 lies on xfs, ``--storage-opt size=``, a
  kernel quota (a writer past it gets "No space left on device"). Elsewhere (another
  filesystem, or a kernel without quota support) no file may grow past it (``--ulimit
  fsize``: "File too large") and a watch over the writable layer (``storage.LayerWatch``)
  kills every process of the box but its init once the layer holds more, again each time it
  grows while over (``DockerBox.full`` says so): the host disk then holds the bound plus
  what a writer wrote before the watch looked (more on a starved host).
- ``launch``: ``docker exec`` wrapped as a ``SandboxProcess``. Killing the ``docker exec``
  client does not stop the command inside, so each launch marks its command's environment
  with a random token and ``kill`` SIGKILLs every process of the container carrying it (a
  process that clears its environment escapes that kill; ``seal`` does not depend on it).
- ``seal``: ``docker stop`` (the kernel kills every process of the container's pid namespace,
  an ``env -i``/``setsid`` leftover included), the ``TOOLCHAIN`` entries removed from its
  writable layer (overlay2's ``UpperDir``) while nothing mounts it (``layers.drop_from_upper``), and
  ``docker start``: the same filesystem under a fresh init, the image's programs back, for
  the cost of a container's stop and start. Another storage driver's writable layer is not
  reached: seal then fails with ``SandboxFailure``.
- ``close``: ``docker rm -f``, idempotent.

The daemon must run without a bridge network (``dockerd --bridge=none --iptables=false``):
boxes run with ``--network none`` and a task that needs a network is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import shutil
import subprocess
import threading
import time
import weakref
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from palaestra.errors import SandboxFailure
from palaestra.sandbox.machines import dockerfile as dockerfile_rules
from palaestra.sandbox.machines import images, storage
from palaestra.sandbox.machines.container_procs import (
    TOKEN_VARIABLE,
    deleted_open_bytes,
    kill_all_but_init,
    kill_marked,
    lease_alive,
    lease_of,
)
from palaestra.sandbox.machines.digest import folder_digest
from palaestra.sandbox.machines.layers import drop_from_upper
from palaestra.sandbox.machines.provider import TOOLCHAIN, Box, BoxSpec, Image, Launch, Provider
from palaestra.sandbox.process import SandboxProcess

log = logging.getLogger("palaestra.sandbox.machines")

BOX_LABEL = "palaestra.box"
LEASE_LABEL = "palaestra.lease"
DIGEST_LABEL = "palaestra.digest"
FROM_LABEL = "palaestra.from"
"""The ids of the images the build started from: a new base (a re-imported
``debian:bookworm-slim``) rebuilds the task's image."""
REPOSITORY = "palaestra-task"
ABANDONED_WATCH = 300.0
NETWORK_REFUSED = (
    "this task needs a network, and machines here have none (every box runs with --network "
    "none; nothing may reach a private-range address)"
)
INIT = (
    "trap '' HUP INT TERM; PATH=/usr/sbin:/usr/bin:/sbin:/bin; "
    "while :; do sleep 2147483647 & wait; done"
)
"""A box's init (pid 1, the image's ``/bin/sh``): it reaps what commands orphan while it
waits, and it stays when every other process of the box is killed (a shell's timeout kills
everything in the box but pid 1; the kernel lets no process of the box signal pid 1). Its
``sleep`` comes from the image's own directories, never from a ``PATH`` the agent could
write to."""
_PROTOCOL_WRAPPER = 'exec 8<&0 9>&1 </dev/null >/dev/null; PALAESTRA_PROTOCOL=8,9 exec "$@"'
"""For ``protocol`` launches: the request and reply channels arrive as the exec's stdin and
stdout; the program finds them as fds 8 and 9 (``PALAESTRA_PROTOCOL``), as under bubblewrap."""


class DockerProvider(Provider):
    """Boxes as containers of the local Docker daemon (see the module's docstring)."""

    name: ClassVar[str] = "docker"

    def __init__(self, *, docker: str = "docker", max_starting: int | None = None) -> None:
        self.docker = docker
        if max_starting is not None:
            self.max_starting = max_starting
        self._starting = asyncio.Semaphore(self.max_starting)
        self._building: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._reaped = False
        self._abandoned: dict[str, float] = {}
        """Names of boxes whose start failed or was cancelled, and until when to look for
        them: removed at once, and by every ``reap`` until removed (the daemon may create the
        container after its client is gone) or ``ABANDONED_WATCH`` seconds have passed.
        ``reap`` runs in a thread beside the event loop: both sides hold ``_abandoned_lock``."""
        self._abandoned_lock = threading.Lock()
        self._quota: bool | None = None

    # -- checks ---------------------------------------------------------------------------

    def problem(self) -> str | None:
        if shutil.which(self.docker) is None:
            return (
                f"the {self.docker} CLI is not installed (scripts/install_machines.sh installs "
                "Debian's docker.io)"
            )
        answer = self._run_sync("version", "--format", "{{.Server.Version}}", timeout=20)
        if answer.returncode != 0:
            return "no Docker daemon answers: start one with scripts/install_machines.sh"
        bridge = self._run_sync("network", "inspect", "bridge", timeout=20)
        if bridge.returncode == 0:
            return (
                "the Docker daemon has a bridge network through which a container could route: "
                "run dockerd with --bridge=none --iptables=false --ip6tables=false"
            )
        return None

    # -- images ---------------------------------------------------------------------------

    @classmethod
    def refusal(cls, context: Path) -> str | None:
        """What the daemon would fetch from the host's network while building ``context``
        (``dockerfile.docker_refusal``: a remote ``ADD``, an image named by ``COPY --from``,
        ...), in one line naming the file and line; ``None`` when nothing."""
        return dockerfile_rules.docker_refusal(Path(context))

    async def build(self, context: Path, *, timeout: float = 1800.0) -> Image:
        context = Path(context).resolve()
        dockerfile = context / "Dockerfile"
        refused = self.refusal(context)
        if refused is not None:
            raise SandboxFailure(refused)
        digest = folder_digest(context)
        tag = f"{REPOSITORY}:{digest.removeprefix('sha256:')[:12]}"
        async with self._building[tag]:
            try:
                async with asyncio.timeout(timeout):
                    return await self._build(context, dockerfile, digest, tag)
            except TimeoutError:
                raise SandboxFailure(
                    f"building {context} took over {timeout:.0f}s (docker build)"
                ) from None

    async def _build(self, context: Path, dockerfile: Path, digest: str, tag: str) -> Image:
        bases = []
        for base in from_images(dockerfile.read_text()):
            status, output, _ = await self._run("image", "inspect", "--format", "{{.Id}}", base)
            if status != 0:
                raise SandboxFailure(_missing_base(base, dockerfile))
            bases.append(output.decode().strip())
        config = await self._image_config(tag)
        labels = (config or {}).get("Labels") or {}
        fresh = (labels.get(DIGEST_LABEL), labels.get(FROM_LABEL)) == (digest, ",".join(bases))
        if config is not None and fresh:
            return _image(tag, digest, config)
        status, output, _ = await self._run(
            "build",
            "--network",
            "none",
            "--pull=false",
            "--force-rm",
            "--label",
            f"{DIGEST_LABEL}={digest}",
            "--label",
            f"{FROM_LABEL}={','.join(bases)}",
            "--tag",
            tag,
            str(context),
            env={"DOCKER_BUILDKIT": "0"},
            merge=True,
        )
        if status != 0:
            raise SandboxFailure(_build_failure(context, output.decode(errors="replace")))
        config = await self._image_config(tag)
        if config is None:
            raise SandboxFailure(f"docker build of {context} made no image {tag}")
        return _image(tag, digest, config)

    async def _image_config(self, ref: str) -> dict[str, Any] | None:
        status, output, _ = await self._run("image", "inspect", "--format", "{{json .Config}}", ref)
        if status != 0:
            return None
        config = json.loads(output)
        return config if isinstance(config, dict) else {}

    # -- boxes ----------------------------------------------------------------------------

    async def start(self, image: Image, spec: BoxSpec) -> DockerBox:
        if spec.network:
            raise SandboxFailure(NETWORK_REFUSED)
        if not self._reaped or self._watching():
            self._reaped = True
            await asyncio.to_thread(self.reap)
        name = f"palaestra-{os.getpid()}-{secrets.token_hex(6)}"
        async with self._starting:
            try:
                async with asyncio.timeout(spec.start_timeout):
                    return await self._start(name, image, spec)
            except TimeoutError:
                self._abandon(name)
                raise SandboxFailure(
                    f"starting a box of {image.ref} took over {spec.start_timeout:.0f}s"
                ) from None
            except BaseException:
                self._abandon(name)
                raise

    async def _start(self, name: str, image: Image, spec: BoxSpec) -> DockerBox:
        quota = await self._storage_quota()
        status, output, errors = await self._run_box(name, image, spec, quota)
        if status != 0 and quota and b"storage-opt" in errors:
            self._quota = False  # xfs without project quotas: the watch holds the bound
            self._remove_sync(name)
            quota = False
            status, output, errors = await self._run_box(name, image, spec, quota)
        if status != 0:
            raise SandboxFailure(f"docker run of {image.ref} failed: {_last_line(errors)}")
        container = output.decode().strip()
        box = DockerBox(self, container, Path("/"), image, 0)
        try:
            await box._locate(name)
        except BaseException:
            box._finalizer.detach()  # an abandoned start: ``start`` removes it
            raise
        if not quota:
            box.watch(spec.storage_mb)
        return box

    async def _storage_quota(self) -> bool:
        """Whether the daemon can bound a container's writable layer (overlay2 over xfs:
        ``--storage-opt size=``); asked once. A daemon that then refuses the option (an
        xfs without project quotas) is remembered as unable."""
        if self._quota is None:
            status, output, _ = await self._run(
                "info", "--format", "{{.Driver}} {{json .DriverStatus}}"
            )
            text = output.decode()
            self._quota = status == 0 and text.startswith("overlay2 ") and '"xfs"' in text
        return self._quota

    async def _run_box(
        self, name: str, image: Image, spec: BoxSpec, quota: bool
    ) -> tuple[int, bytes, bytes]:
        storage = (
            ["--storage-opt", f"size={spec.storage_mb}m"]
            if quota
            else ["--ulimit", f"fsize={spec.storage_mb << 20}"]  # no file past the bound
        )
        return await self._run(
            "run",
            "--detach",
            "--name",
            name,
            "--network",
            "none",
            "--memory",
            f"{spec.memory_mb}m",
            "--memory-swap",
            f"{spec.memory_mb}m",
            "--cpus",
            f"{spec.cpus:g}",
            "--pids-limit",
            str(spec.processes),
            "--log-driver",
            "none",
            "--label",
            f"{BOX_LABEL}=1",
            "--label",
            f"{LEASE_LABEL}={lease_of(os.getpid())}",
            *storage,
            "--entrypoint",
            "/bin/sh",
            image.ref,
            "-c",
            INIT,
        )

    def _watching(self) -> bool:
        with self._abandoned_lock:
            return bool(self._abandoned)

    def _abandon(self, name: str) -> None:
        with self._abandoned_lock:
            self._abandoned[name] = time.monotonic() + ABANDONED_WATCH
        self._remove_sync(name)

    def reap(self) -> int:
        """Remove the boxes of owners that are gone, and this provider's abandoned starts."""
        listing = self._run_sync(
            "ps",
            "--all",
            "--no-trunc",
            "--filter",
            f"label={BOX_LABEL}=1",
            "--format",
            f'{{{{.ID}}}} {{{{.Names}}}} {{{{.Label "{LEASE_LABEL}"}}}}',
            timeout=60,
        )
        if listing.returncode != 0:
            return 0  # no daemon: nothing of ours can be running in it
        with self._abandoned_lock:
            watched = set(self._abandoned)
        dead, seen = [], []
        for line in listing.stdout.decode().splitlines():
            container, name, lease = [*line.split(" ", 2), "", ""][:3]
            if container and (name in watched or not lease_alive(lease)):
                dead.append(container)
                seen.append(name)
        if dead:
            removed = self._run_sync("rm", "--force", "--volumes", *dead, timeout=120)
            if removed.returncode != 0:
                seen = []  # watched names stay watched until a removal is seen to succeed
        now = time.monotonic()
        with self._abandoned_lock:  # in place: a name abandoned meanwhile is kept
            for name in seen:
                self._abandoned.pop(name, None)
            for name, until in list(self._abandoned.items()):
                if until <= now:
                    del self._abandoned[name]
        return len(dead)

    # -- the CLI --------------------------------------------------------------------------

    def _client_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        keep = (
            "PATH",
            "HOME",
            "DOCKER_HOST",
            "DOCKER_CONFIG",
            "DOCKER_CONTEXT",
            "DOCKER_CERT_PATH",
        )
        env = {key: os.environ[key] for key in keep if key in os.environ}
        env.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        return {**env, **(extra or {})}

    async def _run(
        self, *args: str, env: Mapping[str, str] | None = None, merge: bool = False
    ) -> tuple[int, bytes, bytes]:
        """Run ``docker ARGS``; killed if the caller is cancelled (a timeout included)."""
        process = await asyncio.create_subprocess_exec(
            self.docker,
            *args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge else subprocess.PIPE,
            env=self._client_env(env),
        )
        try:
            output, errors = await process.communicate()
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            with contextlib.suppress(BaseException):
                await asyncio.shield(process.wait())
            raise
        return process.returncode or 0, output, errors or b""

    def _run_sync(self, *args: str, timeout: float) -> subprocess.CompletedProcess[bytes]:
        try:
            return subprocess.run(
                [self.docker, *args],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                env=self._client_env(),
                timeout=timeout,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            return subprocess.CompletedProcess([self.docker, *args], 125, b"", str(error).encode())

    def _remove_sync(self, container: str) -> subprocess.CompletedProcess[bytes]:
        """``docker rm -f`` without the event loop: safe on the cancellation path."""
        return self._run_sync("rm", "--force", "--volumes", container, timeout=120)


class DockerBox(Box):
    """One container. ``root`` is its merged overlay directory on this host."""

    def __init__(
        self, provider: DockerProvider, container: str, root: Path, image: Image, pid: int
    ) -> None:
        self.provider = provider
        self.container = container
        self.root = root
        self.image = image
        self.pid = pid
        """The container's init, as the host sees it."""
        self.upper: Path | None = None
        """The container's writable layer (overlay2's ``UpperDir``)."""
        self.full: str | None = None
        """Why the box's processes were killed at its storage bound (the watch), if they were."""
        self._watch: storage.LayerWatch | None = None
        self._closed = False
        self._leftover = _Leftover(provider, container)
        self._finalizer = weakref.finalize(self, self._leftover.remove)
        """Removes the container if the box is dropped unclosed or this process exits first
        (``weakref.finalize`` also runs at interpreter exit)."""

    def watch(self, storage_mb: int) -> None:
        """Hold ``storage_mb`` by watching the writable layer (``storage.LayerWatch``): over
        it, every process of the box but its init is killed, and ``full`` says so."""
        if self.upper is None or self._watch is not None:
            return
        box = weakref.ref(self)  # the watch's thread must not keep a dropped box alive

        def on_full(held: int) -> None:
            if (alive := box()) is not None:
                alive._on_full(held, storage_mb)

        def hidden() -> int:
            alive = box()
            return 0 if alive is None else deleted_open_bytes(alive.pid, [alive.root, alive.upper])

        self._watch = storage.LayerWatch(self.upper, storage_mb << 20, on_full, hidden=hidden)
        self._leftover.watch = self._watch

    def _on_full(self, held: int, storage_mb: int) -> None:
        self.full = (
            f"the box's disk is full: it wrote {held >> 20} MB, over its {storage_mb} MB, "
            "and its processes were killed"
        )
        kill_all_but_init(self.pid)

    async def __aenter__(self) -> DockerBox:
        return self

    async def spawn(self, argv: Sequence[str], how: Launch) -> SandboxProcess:
        if self._closed:
            raise SandboxFailure(f"the box {self.container[:12]} is closed")
        token = secrets.token_hex(12)
        command = [self.provider.docker, "exec"]
        if how.protocol or how.stdin != subprocess.DEVNULL:
            command.append("--interactive")
        if how.user or self.image.user:
            command += ["--user", how.user or self.image.user]
        if how.cwd or self.image.workdir:
            command += ["--workdir", how.cwd or self.image.workdir]
        for key, value in {**(how.env or {}), TOKEN_VARIABLE: token}.items():
            command += ["--env", f"{key}={value}"]
        command.append(self.container)
        if how.protocol:
            command += ["sh", "-c", _PROTOCOL_WRAPPER, "sh"]
        command += list(argv)
        process = await SandboxProcess.start(
            lambda _status, _seccomp: command,
            bubblewrap=False,
            uid=None,
            cwd="/",
            env=self.provider._client_env(),
            stdin=how.stdin,
            stream_limit=how.stream_limit,
            protocol=how.protocol,
            protocol_on_stdio=True,
        )
        process.on_kill = lambda: kill_marked(self.pid, token)
        return process

    def network_namespace(self) -> str | None:
        """The container's (``--network none``: only ``lo``), by its init as this host sees
        it; sealing restarts the container, and with it its namespace."""
        return f"/proc/{self.pid}/ns/net"

    async def seal(self) -> None:
        """Stop the container (the kernel kills every process of its pid namespace, whatever
        its environment or session), put the image's ``TOOLCHAIN`` back in its writable
        layer while no overlay is mounted on it, and start it again: same filesystem, a
        fresh init. ``SandboxFailure`` if a step fails or the daemon's storage driver is not
        overlay2 (its writable layer could not be reached)."""
        if self._closed:
            raise SandboxFailure(f"the box {self.container[:12]} is closed")
        status, _, errors = await self.provider._run("stop", "--time", "0", self.container)
        if status != 0:
            raise SandboxFailure(
                f"cannot stop box {self.container[:12]} to seal it: {_last_line(errors)}"
            )
        status, output, errors = await self.provider._run(
            "inspect",
            "--format",
            "{{.State.Running}} {{.GraphDriver.Name}} {{.GraphDriver.Data.UpperDir}}",
            self.container,
        )
        running, driver, upper = [*output.decode().split(" ", 2), "", ""][:3]
        if status != 0 or running != "false":
            raise SandboxFailure(
                f"box {self.container[:12]} did not stop to be sealed: {_last_line(errors)}"
            )
        if driver != "overlay2" or not upper.strip().startswith("/"):
            raise SandboxFailure(
                f"cannot seal box {self.container[:12]}: its daemon's storage driver is "
                f"{driver or 'unknown'}, and sealing reaches a box's writable layer only "
                "under overlay2 (run dockerd with --storage-driver=overlay2)"
            )
        with self._watch.pause() if self._watch is not None else contextlib.nullcontext():
            try:
                await asyncio.to_thread(drop_from_upper, Path(upper.strip()), TOOLCHAIN)
            except OSError as error:
                raise SandboxFailure(
                    f"cannot put the image's toolchain back in box {self.container[:12]}: {error}"
                ) from None
        status, _, errors = await self.provider._run("start", self.container)
        if status != 0:
            raise SandboxFailure(
                f"cannot start box {self.container[:12]} again after sealing it: "
                f"{_last_line(errors)}"
            )
        await self._locate(self.container)

    async def _locate(self, name: str) -> None:
        """Read the running container's merged directory (``root``) and init (``pid``)."""
        status, output, errors = await self.provider._run(
            "inspect",
            "--format",
            "{{.GraphDriver.Data.MergedDir}} {{.State.Pid}} {{.GraphDriver.Data.UpperDir}}",
            self.container,
        )
        merged, pid, upper = [*output.decode().strip().split(" ", 2), "", ""][:3]
        if status != 0 or not merged.startswith("/") or not pid.isdigit() or pid == "0":
            raise SandboxFailure(
                f"the box {name} has no merged directory or init on this host (the docker "
                f"provider needs a local daemon with overlay2): {_last_line(errors)}"
            )
        self.root = Path(merged)
        self.pid = int(pid)
        self.upper = Path(upper) if upper.startswith("/") else None

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._watch is not None:
            self._watch.stop()
        try:
            status, _, errors = await self.provider._run(
                "rm", "--force", "--volumes", self.container
            )
        except asyncio.CancelledError:
            if self.provider._remove_sync(self.container).returncode == 0:
                self._finalizer.detach()
            raise
        if status != 0 and b"No such container" not in errors:
            raise SandboxFailure(  # the finalizer stays: it tries again when the box goes
                f"docker rm of box {self.container[:12]} failed: {_last_line(errors)}"
            )
        self._finalizer.detach()


class _Leftover:
    """What removes a box's container when its ``DockerBox`` was never closed: dropped (the
    object collected) or still open when the process exits. Holds no reference to the box,
    so the box can be collected. Only the process that started the box removes it: a forked
    child exiting runs the same finalizers, and must leave its parent's boxes alone."""

    def __init__(self, provider: DockerProvider, container: str) -> None:
        self.docker = provider.docker
        self.env = provider._client_env()
        self.container = container
        self.owner = os.getpid()
        self.watch: storage.LayerWatch | None = None

    def remove(self) -> None:
        if os.getpid() != self.owner:
            return
        if self.watch is not None:
            self.watch.stop()
        log.warning("docker box %s was not closed: removing it", self.container[:12])
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(
                [self.docker, "rm", "--force", "--volumes", self.container],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                env=self.env,
                timeout=120,
                check=False,
            )


# -- Dockerfiles and messages ---------------------------------------------------------------


def from_images(dockerfile: str) -> list[str]:
    """The images a Dockerfile's ``FROM`` lines name (not ``scratch``, not an earlier
    stage), with ``ARG`` defaults declared before the first ``FROM`` substituted."""
    args: dict[str, str | None] = {}
    stages: set[str] = set()
    found: list[str] = []
    for instruction in dockerfile_rules.scan(dockerfile).instructions:
        if instruction.keyword == "ARG" and not stages and not found:
            with contextlib.suppress(SandboxFailure):
                for name, value in dockerfile_rules.raw_pairs(instruction):
                    args[name] = value
        elif instruction.keyword == "FROM":
            _, rest = dockerfile_rules.leading_flags(instruction.text)
            words = rest.split()
            if not words:
                continue
            image = dockerfile_rules.resolve(words[0], args) or words[0]
            if image.lower() != "scratch" and image not in stages and image not in found:
                found.append(image)
            if len(words) >= 3 and words[1].lower() == "as":
                stages.add(words[2])
    return found


def _missing_base(image: str, dockerfile: Path) -> str:
    suite = images.suite_of(image)
    if suite is not None and image in suite.tags:
        option = "" if suite == images.BOOKWORM else f" --suite {suite.name}"
        return (
            f"the image {image} (FROM in {dockerfile}) is not in the local Docker daemon: "
            f"import the offline base with `{images.BUILD_COMMAND}{option}` (nothing is "
            "pulled here)"
        )
    return (
        f"the image {image} (FROM in {dockerfile}) cannot be had offline: nothing is pulled "
        f"here; start from {images.TAGS[0]} (the offline base) or load {image} into the daemon"
    )


def _build_failure(context: Path, output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    steps = [line for line in lines if line.startswith("Step ")]
    step = steps[-1] if steps else "its first step"
    return f"docker build of {context} failed at {step[:200]}: {_last_line(output)[:300]}"


def _last_line(text: bytes | str) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def _image(tag: str, digest: str, config: Mapping[str, Any]) -> Image:
    env = dict(item.split("=", 1) for item in config.get("Env") or [] if "=" in item)
    return Image(
        provider=DockerProvider.name,
        ref=tag,
        digest=digest,
        workdir=config.get("WorkingDir") or "/",
        env=env,
        user=config.get("User") or "root",
    )

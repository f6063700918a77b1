"""The ``rootfs`` provider: Debian root file systems as directory layers, boxes under bubblewrap.

No daemon: for clusters without Docker. ::

    provider = RootfsProvider()
    image = await provider.build(Path("task/environment"))   # cached layers (``build``)
    async with await provider.start(image, BoxSpec()) as box:
        process = await box.launch(["python3", "-c", "print(1)"], stdin=subprocess.DEVNULL)

- **Images** are built from the task's Dockerfile (the subset ``dockerfile`` reads) into
  layers under ``~/.cache/palaestra/rootfs`` (``layers``, ``build``). ``FROM
  debian:bookworm-slim`` is the offline Debian base (``images.base_tar``, built with
  ``mmdebstrap``); any other base image is refused with one line naming it.
- **A box** is a kernel overlay of the image's layers with an empty directory of its own on
  top, mounted at ``<runtime>/<id>/merged`` (``root``): starting one copies no image file,
  and what the episode writes lands in its own upper directory only, on the box's own disk
  of ``BoxSpec.storage_mb`` (``disks``): past it the box gets ``ENOSPC`` and the host's
  disk gains no more. Commands run there under bubblewrap (``inside``): new pid, network,
  ipc and uts namespaces, no network but ``lo``, the kernel's settings read-only, as the
  image's user, in its workdir, with its environment; all of a box's processes are in the
  box's cgroups (``cgroups``), which bound their memory (``BoxSpec.memory_mb``), their
  number (``processes``) and their CPU (``cpus``) together, where this machine allows.
- **The host is out of the box's reach, and the box out of the host users'**: every
  host-side mount of a box's files (its overlay, its disk, a build step's overlay) is
  ``nosuid,nodev``, so a setuid program or a device node the box (or its image) made is
  neither on the host; the runtime directory and each box's directory are open to root
  and to the boxes' own commands only (``inside.BOX_GROUP``), the layer store to root only.
- **Lifecycle**: at most ``max_starting`` boxes start at once, each within
  ``BoxSpec.start_timeout``. A box's lease (``leases``) is written before anything of it
  exists; ``seal`` kills every process of the box (by its cgroups, and by each launch's pid
  namespace) and puts the image's ``TOOLCHAIN`` back (``layers.drop_from_upper``) under a
  fresh overlay; ``close`` kills its processes, detaches the overlay and the disk and
  removes its directory and lease; a box whose collector died is torn down by the next
  provider (``reap``, run when the provider is first used).

Root is needed (kernel overlay and loop mounts, the image's files belong to uid 0);
``problem`` says so elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar

from palaestra.errors import SandboxFailure
from palaestra.sandbox import seccomp
from palaestra.sandbox.cgroup import find_memory_cgroups
from palaestra.sandbox.machines import inside, leases, netns
from palaestra.sandbox.machines.build import Builder
from palaestra.sandbox.machines.cgroups import BoxCgroups, join_argv
from palaestra.sandbox.machines.digest import folder_digest
from palaestra.sandbox.machines.disks import make_disk
from palaestra.sandbox.machines.layers import (
    LayerStore,
    default_cache,
    drop_from_upper,
    empty_directory,
    key_of,
    mount_overlay,
)
from palaestra.sandbox.machines.provider import TOOLCHAIN, Box, BoxSpec, Image, Launch, Provider
from palaestra.sandbox.process import SandboxProcess

NAME = "rootfs"
SEAL_TIMEOUT = 30.0
"""Seconds ``seal`` waits for the box's processes to be gone and its overlay to unmount."""


def default_runtime() -> Path:
    """Where boxes live while they run: ``/var/lib/palaestra/boxes`` as root."""
    return Path("/var/lib/palaestra/boxes")


def offline_base() -> Path:
    """The offline Debian base tar, from the base image builder (``images.base_tar``)."""
    try:  # written by the base image builder; looked up by name, so this module stands alone
        images = importlib.import_module("palaestra.sandbox.machines.images")
    except ImportError as error:
        raise SandboxFailure(
            f"the offline Debian base image cannot be built here: {error}"
        ) from None
    return Path(images.base_tar())


def offline_suite_base(suite: str) -> Path:
    """The offline Debian base tar of another suite than bookworm (``images.SUITES``)."""
    try:  # looked up by name, as ``offline_base``
        images = importlib.import_module("palaestra.sandbox.machines.images")
    except ImportError as error:
        raise SandboxFailure(
            f"the offline Debian base image cannot be built here: {error}"
        ) from None
    return Path(images.base_tar(suite=images.SUITES[suite]))


class RootfsProvider(Provider):
    """Images as cached layers, boxes as overlays under bubblewrap (see the module).

    ``cache``: the layer store (default ``~/.cache/palaestra/rootfs``); ``runtime``: where
    running boxes live (default ``/var/lib/palaestra/boxes``; made root's and
    ``inside.BOX_GROUP``'s only, and every directory above it must be searchable by others,
    or an image whose ``USER`` is not root cannot reach its box); ``base``: returns the
    path of the base root file system tar (default ``offline_base``).
    """

    name: ClassVar[str] = NAME

    def __init__(
        self,
        *,
        cache: Path | None = None,
        runtime: Path | None = None,
        base: Callable[[], Path] | None = None,
        max_starting: int | None = None,
    ) -> None:
        self.store = LayerStore(cache or default_cache())
        self.runtime = runtime or default_runtime()
        self.base = base or offline_base
        self.suites = offline_suite_base
        """Other suites' base tars (debian:trixie-slim: ``images.TRIXIE``)."""
        if max_starting is not None:
            self.max_starting = max_starting
        self._starting: asyncio.Semaphore | None = None
        self._ready = False
        self._cgroups: BoxCgroups | None = None
        self.reaped = 0
        """Boxes of dead owners torn down when this provider was first used."""
        self.steps_run = 0
        """Build steps run (not found in the cache) by this provider."""
        self.late: set[asyncio.Future[RootfsBox]] = set()
        """Starts given up on (timed out, cancelled) still running: torn down when done."""

    def problem(self) -> str | None:
        if os.geteuid() != 0:
            return (
                "the rootfs provider needs root: it mounts kernel overlays and its images' "
                "files belong to uid 0 (without root, use the docker provider)"
            )
        for tool in ("bwrap", "mount", "tar", "setpriv", "mkfs.ext4"):
            if shutil.which(tool) is None:
                return f"the rootfs provider needs {tool}, which is not installed"
        return inside.group_problem()

    @classmethod
    def refusal(cls, context: Path) -> str | None:
        """What the rootfs builder cannot build in ``context``'s Dockerfile (several ``FROM``,
        ``ONBUILD``, ``RUN --mount``, a URL, ...: ``dockerfile.rootfs_refusal``), or ``None``."""
        from palaestra.sandbox.machines.dockerfile import rootfs_refusal

        return rootfs_refusal(Path(context))

    def prepare(self) -> None:
        """Make the directories, find the memory cgroups, reap dead owners' boxes (once)."""
        if self._ready:
            return
        why = self.problem()
        if why is not None:
            raise SandboxFailure(why)
        self.store.prepare()
        self.build_dir.mkdir(parents=True, exist_ok=True)
        self.runtime.mkdir(parents=True, exist_ok=True)
        inside.private_directory(self.runtime)
        found = find_memory_cgroups()
        self._cgroups = BoxCgroups(None if isinstance(found, str) else found)
        self._ready = True
        self.reaped = self.reap()

    @property
    def build_dir(self) -> Path:
        return self.store.root / "build"

    def reap(self) -> int:
        """Tear down the boxes and build steps of dead owners (and sweep the half-unpacked
        layers they left); how many boxes and steps."""
        count = 0
        for directory in (self.runtime, self.build_dir):
            count += leases.reap(directory)
        self.store.sweep()
        if self._cgroups is not None:
            self._cgroups.sweep()
        return count

    async def build(self, context: Path, *, timeout: float = 1800.0) -> Image:
        self.prepare()
        deadline = time.monotonic() + timeout
        context = Path(context)
        assert self._cgroups is not None
        builder = Builder(
            self.store, self.build_dir, self.base, self._cgroups, self.runtime, self.suites
        )
        state = await builder.build(context, deadline)
        self.steps_run += state.ran
        ref = key_of(state.key, json.dumps([state.chain, state.workdir, state.env, state.user]))
        record = {
            "chain": state.chain,
            "workdir": state.workdir,
            "env": state.env,
            "user": state.user,
        }
        target = self.store.images / f"{ref}.json"
        partial = target.with_name(f".{target.name}.{os.getpid()}")
        partial.write_text(json.dumps(record))
        os.replace(partial, target)
        return Image(
            provider=NAME,
            ref=ref,
            digest=folder_digest(context),
            workdir=state.workdir,
            env=dict(state.env),
            user=state.user,
        )

    async def start(self, image: Image, spec: BoxSpec) -> Box:
        self.prepare()
        if spec.network:
            raise SandboxFailure("this task needs a network; boxes here have none (policy)")
        if image.provider != NAME:
            raise SandboxFailure(f"image {image.ref} was built by {image.provider}, not {NAME}")
        chain = self._chain(image)
        if self._starting is None:
            self._starting = asyncio.Semaphore(self.max_starting)
        async with self._starting:
            started = asyncio.ensure_future(asyncio.to_thread(self._make, image, chain, spec))
            try:
                return await asyncio.wait_for(asyncio.shield(started), spec.start_timeout)
            except BaseException as error:
                self.late.add(started)
                started.add_done_callback(self._close_late)
                if isinstance(error, TimeoutError):
                    raise SandboxFailure(
                        f"a box of image {image.ref[:12]} did not start within "
                        f"{spec.start_timeout:g} s"
                    ) from None
                raise

    def _close_late(self, future: asyncio.Future[RootfsBox]) -> None:
        """A box that finished starting after its caller gave up is torn down."""
        self.late.discard(future)
        if not future.cancelled() and future.exception() is None:
            future.result().close_now()

    def _chain(self, image: Image) -> list[str]:
        try:
            record = json.loads((self.store.images / f"{image.ref}.json").read_text())
            chain = [str(name) for name in record["chain"]]
        except (OSError, ValueError, KeyError) as error:
            raise SandboxFailure(f"image {image.ref} is not built here: {error}") from None
        missing = [name for name in chain if not self.store.has(name)]
        if missing:
            raise SandboxFailure(
                f"image {image.ref} lost its layers ({', '.join(missing)}): rebuild it"
            )
        return chain

    def _make(self, image: Image, chain: list[str], spec: BoxSpec) -> RootfsBox:
        """Make a box (in a thread): lease first, then directories, cgroup and overlay."""
        box_id = secrets.token_hex(8)
        directory = self.runtime / box_id
        merged, disk = directory / "merged", directory / "disk"
        lease = leases.Lease(box=box_id, directory=str(directory), mounts=[str(merged), str(disk)])
        cgroups: list[Path] = []
        try:
            if self._cgroups is not None:
                cgroups = self._cgroups.create(spec.memory_mb, spec.processes, spec.cpus)
                lease.cgroups = [str(path) for path in cgroups]
            lease.write(self.runtime)
            directory.mkdir()
            inside.private_directory(directory)
            merged.mkdir()
            disk.mkdir()
            make_disk(directory / "disk.img", disk, spec.storage_mb, self.store.disks)
            (disk / "upper").mkdir(mode=0o755)
            os.chmod(disk / "upper", 0o755)  # the box's "/" (the overlay's root is the upper's)
            (disk / "work").mkdir(mode=0o700)
            mount_overlay(self.store.layers, chain, disk / "upper", disk / "work", merged)
            namespace = netns.new_namespace() if spec.loopback else None
        except BaseException as error:
            leases.tear_down(lease, self.runtime)
            if isinstance(error, SandboxFailure):
                raise
            if isinstance(error, OSError):
                raise SandboxFailure(
                    f"cannot start a box of image {image.ref[:12]}: {error}"
                ) from None
            raise
        memory = bool(cgroups) and self._cgroups is not None and self._cgroups.memory is not None
        return RootfsBox(
            self,
            image,
            box_id,
            directory,
            lease,
            cgroups,
            spec,
            chain,
            memory_bound=memory,
            namespace=namespace,
        )


class RootfsBox(Box):
    """One episode's box: ``root`` is its merged overlay as the host sees it."""

    def __init__(
        self,
        provider: RootfsProvider,
        image: Image,
        box_id: str,
        directory: Path,
        lease: leases.Lease,
        cgroups: list[Path],
        spec: BoxSpec,
        chain: list[str],
        *,
        memory_bound: bool = False,
        namespace: int | None = None,
    ) -> None:
        self.provider = provider
        self.namespace = namespace
        """An open descriptor of the network namespace the box's commands share
        (``BoxSpec.loopback``); None: each command has its own."""
        self.image = image
        self.id = box_id
        self.directory = directory
        self.root = directory / "merged"
        self.upper = directory / "disk" / "upper"
        self.work = directory / "disk" / "work"
        self.lease = lease
        self.cgroups = cgroups
        self.memory_bound = memory_bound
        self.spec = spec
        self.chain = chain
        self._processes: set[SandboxProcess] = set()
        """Every launch not known to be over: ``seal`` kills them (and their pid namespaces)."""
        self._closed = False

    def user(self, spec: str | None = None) -> inside.User:
        """A user of the box (default the image's) as its ``/etc/passwd`` names it."""
        return inside.resolve_user(self.root, spec or self.image.user)

    def bytes_written(self) -> int:
        """Bytes the box's own layer holds: what the episode wrote (copy-on-write)."""
        total = 0
        for folder, _, names in os.walk(self.upper):
            for name in names:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(folder, name)).st_blocks * 512
        return total

    async def spawn(self, argv: Sequence[str], how: Launch) -> SandboxProcess:
        if self._closed:
            raise SandboxFailure(f"box {self.id} is closed")
        who = self.user(how.user)
        environment = inside.environment(who, self.image.env, how.env)
        directory = how.cwd or self.image.workdir or "/"
        prlimit = [] if who.uid == 0 else [f"--nproc={self.spec.processes}"]
        join = join_argv(self.cgroups)

        def build_argv(status_fd: int | None, seccomp_fd: int | None) -> list[str]:
            return inside.argv(
                list(argv),
                root=self.root,
                user=who,
                cwd=directory,
                env=environment,
                prlimit=[*prlimit, "--core=0"],
                join=join,
                status_fd=status_fd,
                seccomp_fd=seccomp_fd,
                netns=self.network_namespace(),
            )

        process = await SandboxProcess.start(
            build_argv,
            bubblewrap=True,
            uid=None,
            cwd="/",
            env={},
            stdin=how.stdin,
            stream_limit=how.stream_limit,
            seccomp=seccomp.program(memfd=self.memory_bound),
            protocol=how.protocol,
        )
        self._processes = {known for known in self._processes if known.returncode is None}
        self._processes.add(process)
        return process

    def network_namespace(self) -> str | None:
        if self.namespace is None:
            return None
        return f"/proc/{os.getpid()}/fd/{self.namespace}"

    async def seal(self) -> None:
        """Kill every process of the box, then put the image's ``TOOLCHAIN`` back under a
        fresh overlay (see the module); ``SandboxFailure`` if the box cannot be sealed."""
        if self._closed:
            raise SandboxFailure(f"box {self.id} is closed")
        deadline = time.monotonic() + SEAL_TIMEOUT
        launched = list(self._processes)
        for process in launched:  # each launch's pid namespace dies with its init
            process.kill()
        self._processes = set()
        await asyncio.to_thread(self._reset, launched, deadline)

    def _reset(self, launched: list[SandboxProcess], deadline: float) -> None:
        """Kill what runs in the box's cgroups, wait until nothing of the box is left (each
        launch's bubblewrap gone with its pid namespace, the cgroups empty), then unmount
        its overlay, drop the box's ``TOOLCHAIN`` from its upper directory, empty the work
        directory and mount the overlay again."""
        for cgroup in self.cgroups:
            leases.kill_cgroup(cgroup)
        try:
            for process in launched:
                process.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise SandboxFailure(f"box {self.id}: its processes did not die; not sealed") from None
        if not all(leases.emptied(cgroup, deadline) for cgroup in self.cgroups):
            raise SandboxFailure(f"box {self.id}: its processes did not die; not sealed")
        try:
            leases.unmount_now(self.root, deadline)
            drop_from_upper(self.upper, TOOLCHAIN)
            empty_directory(self.work)
        except OSError as error:
            raise SandboxFailure(f"box {self.id} cannot be sealed: {error}") from None
        layers = self.provider.store.layers
        mount_overlay(layers, self.chain, self.upper, self.work, self.root)

    async def close(self) -> None:
        await asyncio.to_thread(self.close_now)

    def close_now(self) -> None:
        """``close`` without the event loop (blocks for the unmount and the removal)."""
        if self._closed:
            return
        self._closed = True
        for process in list(self._processes):
            with contextlib.suppress(Exception):
                process.kill()
        leases.tear_down(self.lease, self.provider.runtime)
        if self.namespace is not None:
            os.close(self.namespace)
            self.namespace = None

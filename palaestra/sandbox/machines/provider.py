"""The provider interface: build an image from a Dockerfile folder, start boxes from it.

::

    provider = providers.get("rootfs")()            # or "docker"
    image = await provider.build(Path("task/environment"), timeout=600)
    box = await provider.start(image, BoxSpec(memory_mb=2048, cpus=1, storage_mb=4096))
    try:
        process = await box.launch(["bash", "-lc", "ls /"], stdin=subprocess.DEVNULL)
        outcome = await supervise(process, limits)
        box.root / "app"                            # the box's filesystem, seen from the host
    finally:
        await box.close()

What every provider guarantees:

- ``build`` is cached by the folder's content: the same Dockerfile and context build once per
  machine (a cache under ``~/.cache/palaestra``). A base image that cannot be had offline, a
  failing step, or a build over ``timeout`` raises ``SandboxFailure`` naming the image or step.
- ``start`` gives a box whose filesystem is a copy-on-write layer over the image (starting
  copies no image file), with no network at all, bounded by ``BoxSpec``. Starts are capped
  (``max_starting`` at once per provider) and bounded in time; a start that fails raises
  ``SandboxFailure``. Every box holds a lease (a file naming its owner process) from before
  it exists until after it is gone, so a box whose collector was killed (even ``kill -9``) is
  torn down by the next provider that starts on this machine (``reap``).
- ``launch`` runs a command in the box as a ``SandboxProcess`` (``supervise`` bounds it); the
  box's processes share its filesystem, so a shell and a later verifier see the same files.
- ``seal`` ends the agent's phase: every process of the box is killed (found by cgroup or
  pid namespace, whatever it did to its environment or session), and the image's own files
  are back at ``TOOLCHAIN`` (the agent's changes there are dropped), so what runs next in the
  box (the verifier) runs the image's programs over the agent's work. ``launch`` works again
  after it.
- ``close`` kills every process of the box and removes its filesystem and lease; it is
  idempotent and safe on every path (success, failure, cancellation).

A task that needs a network (``BoxSpec.network``) is refused with one line on a machine whose
policy forbids it: nothing here may reach a private-range address.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from palaestra.sandbox.process import SandboxProcess

TOOLCHAIN: tuple[str, ...] = (
    # /usr but /usr/local/bin and /usr/local/sbin: a command the agent installs there is its
    # work (the verifier's PATH searches them last, so it shadows none of the image's).
    "usr/bin",
    "usr/sbin",
    "usr/lib",
    "usr/lib32",
    "usr/lib64",
    "usr/libx32",
    "usr/libexec",
    "usr/include",
    "usr/share",
    "usr/games",
    "usr/src",
    "usr/local/lib",
    "usr/local/lib64",
    "usr/local/libexec",
    "usr/local/include",
    "usr/local/share",
    "usr/local/etc",
    "usr/local/games",
    "usr/local/src",
    "bin",
    "sbin",
    "lib",
    "lib32",
    "lib64",
    "libx32",
    "etc/ld.so.preload",
    "etc/ld.so.cache",
    "etc/ld.so.conf",
    "etc/ld.so.conf.d",
    "etc/alternatives",
    "etc/environment",
    "etc/profile",
    "etc/profile.d",
    "etc/bash.bashrc",
    "etc/inputrc",
    "etc/gitconfig",
    "etc/perl",
    "etc/python3",
    "etc/python3.11",
    "etc/python3.12",
    "etc/python3.13",
    "etc/nsswitch.conf",
    "etc/pam.conf",
    "etc/pam.d",
    "etc/security",
    "etc/login.defs",
    "etc/shells",
    "etc/sudoers",
    "etc/sudoers.d",
)
"""What ``Box.seal`` puts back as the image had it (paths relative to the box's root): the
programs, libraries and start-up configuration every command of the verifier runs with. The
agent's changes there are dropped before the tests run; its work elsewhere is what they see,
accounts (``/etc/passwd``, ``/etc/group``) and commands in ``/usr/local/bin`` included: a
check names an unprivileged user by number, and finds the image's programs first on PATH."""
VERIFIER_PATH_LAST = ("/usr/local/sbin", "/usr/local/bin")
"""Searched last on the verifier's PATH (``verifier_path``): the agent may install commands
there, and a ``python3`` it put in one must not shadow the image's."""
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""A box's PATH when its image sets none (Docker's default)."""


def verifier_path(path: str | None) -> str:
    """``path`` (default ``DEFAULT_PATH``) with ``VERIFIER_PATH_LAST`` moved to its end."""
    entries = (path or DEFAULT_PATH).split(":")
    last = [entry for entry in entries if entry.rstrip("/") in VERIFIER_PATH_LAST]
    return ":".join([entry for entry in entries if entry not in last] + last)


@dataclass(frozen=True, slots=True)
class Image:
    """A built image: ``ref`` is the provider's name for it (a tag, a layer chain's digest).

    ``workdir``, ``env`` and ``user`` are what the Dockerfile's ``WORKDIR``, ``ENV`` and
    ``USER`` left in force: commands in a box start there, with those, as that user."""

    provider: str
    ref: str
    digest: str
    """sha256 of the folder it was built from (``palaestra.wire.harbor.folder_digest``)."""
    workdir: str = "/"
    env: Mapping[str, str] = field(default_factory=dict)
    user: str = "root"


@dataclass(frozen=True, slots=True)
class BoxSpec:
    """What one box may use (Harbor's ``[environment]``: cpus, memory, storage)."""

    cpus: float = 1.0
    memory_mb: int = 2048
    storage_mb: int = 10240
    processes: int = 512
    network: bool = False
    start_timeout: float = 120.0
    loopback: bool = False
    """Every command of the box shares one network namespace, with nothing in it but ``lo``,
    that the host can listen in (``Box.network_namespace``): how a filtering proxy serves a
    box that has no network (``egress``). A container's commands always share one."""


@dataclass(frozen=True, slots=True)
class Launch:
    """How ``Box.launch`` starts a command: its keywords, as one value."""

    stdin: int
    user: str | None = None
    cwd: str | None = None
    env: Mapping[str, str] | None = None
    stream_limit: int = 2**16
    protocol: bool = False


class Box(abc.ABC):
    """One episode's machine. Use ``async with`` or call ``close``."""

    root: Path
    """The box's root filesystem as the host sees it (for an editor, or copying files in)."""
    image: Image

    async def launch(
        self,
        argv: Sequence[str],
        *,
        stdin: int,
        user: str | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stream_limit: int = 2**16,
        protocol: bool = False,
    ) -> SandboxProcess:
        """Start ``argv`` in the box (as ``user``, default the image's; in ``cwd``, default
        the image's workdir). ``protocol``: stdin is a pipe the caller writes (a shell)."""
        how = Launch(stdin, user, cwd, env, stream_limit, protocol)
        return await self.spawn(argv, how)

    @abc.abstractmethod
    async def spawn(self, argv: Sequence[str], how: Launch) -> SandboxProcess:
        """What ``launch`` does, its keywords in ``how``: each kind of box writes this."""

    def network_namespace(self) -> str | None:
        """A path (``/proc/...``) naming the network namespace every command of the box runs
        in, for the host to listen in (``netns.listen_in``); None when the box's commands do
        not share one (a rootfs box started without ``BoxSpec.loopback``). It may change
        when the box is sealed."""
        return None

    @abc.abstractmethod
    async def seal(self) -> None:
        """End the agent's phase (see the module): kill every process of the box, put the
        image's ``TOOLCHAIN`` back; ``SandboxFailure`` if that cannot be done (the box is
        then not fit to verify in)."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Kill everything in the box, remove its filesystem and its lease. Idempotent."""

    async def __aenter__(self) -> Box:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()


class Provider(abc.ABC):
    """A plug-in (entry-point group ``palaestra.sandboxes``) that builds images and starts
    boxes. One instance per collector process."""

    name: ClassVar[str]
    max_starting: int = 8
    """Boxes starting at once; more wait their turn."""

    @abc.abstractmethod
    def problem(self) -> str | None:
        """Why this provider cannot run here (one line), or ``None``."""

    @classmethod
    def refusal(cls, context: Path) -> str | None:
        """Why this provider cannot build the Dockerfile folder ``context`` as written (one
        line naming the file, line and instruction), checked when the task is loaded, before
        any rollout; ``None`` when it can."""
        return None

    @abc.abstractmethod
    async def build(self, context: Path, *, timeout: float = 1800.0) -> Image:
        """Build (or find in the cache) the image of the Dockerfile folder ``context``."""

    @abc.abstractmethod
    async def start(self, image: Image, spec: BoxSpec) -> Box:
        """Start a box from ``image``; ``SandboxFailure`` if it cannot be had in time."""

    @abc.abstractmethod
    def reap(self) -> int:
        """Tear down what dead owners left (boxes, mounts, directories); how many."""

"""A box is a boundary: root in it cannot set the kernel's knobs, and nothing it plants (a
setuid file, a device node) works for another user of the host, on either provider."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from palaestra.errors import SandboxFailure
from palaestra.sandbox.limits import Limits
from palaestra.sandbox.machines import images
from palaestra.sandbox.machines.docker import DockerProvider
from palaestra.sandbox.machines.provider import Box, BoxSpec, Image
from palaestra.sandbox.machines.rootfs import RootfsBox, RootfsProvider
from palaestra.sandbox.process import Outcome, supervise
from tests.sandbox.machines.docker_support import daemon_or_skip

SPEC = BoxSpec(memory_mb=512, start_timeout=60)
SAME_VALUE_BACK = "cat /proc/sys/kernel/core_uses_pid > /proc/sys/kernel/core_uses_pid"
"""Writes the knob's own value back: fails where /proc/sys is read-only, changes nothing
on the host where it is not (never a test of ``core_pattern``)."""
SETUID_COPY = "cp /bin/bash {path} && chmod 4755 {path} && ls -l {path}"
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
NOBODY += ["/bin/sh", "-c", 'exec "$@"', "sh"]
"""Host ``nobody``: setpriv keeps root's capabilities up to its own ``exec``, so the command
is exec'd by a shell that is nobody through and through."""


async def run(box: Box, script: str, *, user: str | None = None) -> Outcome:
    process = await box.launch(["sh", "-c", script], stdin=subprocess.DEVNULL, user=user)
    try:
        return await supervise(process, Limits(wall_time=60))
    finally:
        process.close()


def as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` on the host as the user ``nobody`` (no groups)."""
    return subprocess.run([*NOBODY, *argv], capture_output=True, text=True, timeout=30)


def euid_through(path: Path) -> str:
    """The effective uid host ``nobody`` gets by running the bash copy at ``path`` (``-p``
    keeps a setuid bash's privilege); empty when it cannot run it."""
    done = as_nobody(str(path), "-p", "-c", "id -u")
    return done.stdout.strip() if done.returncode == 0 else ""


@contextlib.contextmanager
def secret_device(tmp_path: Path) -> Iterator[tuple[int, int]]:
    """A root-only host block device (a loop device over a root-only file holding a
    secret): its major and minor numbers."""
    backing = tmp_path / "secret.img"
    backing.write_bytes(b"host-secret".ljust(4096, b"\0"))
    backing.chmod(0o600)
    device = subprocess.run(
        ["losetup", "--find", "--show", "--read-only", str(backing)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    try:
        info = os.stat(device)
        assert info.st_mode & 0o077 == 0, "the loop device must be root's only"
        yield os.major(info.st_rdev), os.minor(info.st_rdev)
    finally:
        subprocess.run(["losetup", "--detach", device], capture_output=True)


def read_as_nobody(path: Path) -> str:
    done = as_nobody("head", "-c", "11", str(path))
    return done.stdout if done.returncode == 0 else ""


def mount_options(point: Path) -> set[str]:
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[4] == str(point):
            return set(fields[5].split(","))
    raise AssertionError(f"nothing is mounted at {point}")


# -- the kernel's settings (rootfs) --------------------------------------------------------


async def test_root_in_a_box_cannot_write_the_kernels_settings_nor_uncover_them(
    provider: RootfsProvider, context: Path
) -> None:
    image = await provider.build(context)
    async with await provider.start(image, SPEC) as box:
        wrote = await run(box, SAME_VALUE_BACK, user="root")
        uncover = await run(
            box,
            "umount /proc/sys || mount -o remount,rw /proc/sys; " + SAME_VALUE_BACK,
            user="root",
        )
        trigger = await run(box, "echo h > /proc/sysrq-trigger", user="root")
        seen = await run(
            box,
            "cat /proc/keys 2>/dev/null | wc -c; ls -A /sys | wc -l; ls -A /proc/acpi",
            user="root",
        )
        as_user = await run(box, SAME_VALUE_BACK)
    assert wrote.status != 0 and b"Read-only file system" in wrote.stderr, wrote
    assert uncover.status != 0 and b"Read-only file system" in uncover.stderr, uncover
    assert trigger.status != 0
    assert seen.stdout.decode().split() == ["0", "0"], seen  # no keys, no sysfs, no ACPI
    assert as_user.status != 0


async def test_a_run_step_at_build_cannot_write_the_kernels_settings(
    provider: RootfsProvider, tmp_path: Path
) -> None:
    (tmp_path / "Dockerfile").write_text(f"FROM debian:bookworm-slim\nRUN {SAME_VALUE_BACK}\n")
    with pytest.raises(SandboxFailure, match="Read-only file system"):
        await provider.build(tmp_path)


# -- what a box plants, seen from the host (rootfs) -------------------------------------------


async def test_a_root_agents_setuid_copy_of_bash_gives_host_nobody_nothing(
    provider: RootfsProvider, context: Path
) -> None:
    image = await provider.build(context)
    async with await provider.start(image, SPEC) as box:
        assert isinstance(box, RootfsBox)
        planted = await run(box, SETUID_COPY.format(path="/x"), user="root")
        assert planted.stdout.startswith(b"-rwsr-xr-x"), planted
        for path in (box.root / "x", box.upper / "x"):
            assert path.exists()
            assert euid_through(path) == ""
        assert as_nobody("ls", str(box.root)).returncode != 0
        assert {"nosuid", "nodev"} <= mount_options(box.root)


async def test_a_device_node_made_in_a_box_does_not_open_for_host_nobody(
    provider: RootfsProvider, context: Path, tmp_path: Path
) -> None:
    image = await provider.build(context)
    with secret_device(tmp_path) as (major, minor):
        async with await provider.start(image, SPEC) as box:
            assert isinstance(box, RootfsBox)
            made = await run(box, f"mknod /node b {major} {minor} && chmod 666 /node", user="root")
            assert made.status == 0, made.stderr
            for path in (box.root / "node", box.upper / "node"):
                assert path.exists()
                assert read_as_nobody(path) == ""


async def test_a_setuid_file_of_the_image_gives_host_nobody_nothing(
    provider: RootfsProvider, tmp_path: Path
) -> None:
    (tmp_path / "Dockerfile").write_text(
        f"FROM debian:bookworm-slim\nRUN {SETUID_COPY.format(path='/usr/local/bin/sb')}\n"
    )
    image = await provider.build(tmp_path)
    layers = [provider.store.path(name) for name in provider._chain(image)]
    async with await provider.start(image, SPEC) as box:
        baked = [layer / "usr/local/bin/sb" for layer in layers]
        assert (box.root / "usr/local/bin/sb").stat().st_mode & 0o4000
        for path in [box.root / "usr/local/bin/sb", *[p for p in baked if p.exists()]]:
            assert euid_through(path) == ""


async def test_a_non_root_agents_setuid_file_gives_host_nobody_nothing(
    provider: RootfsProvider, context: Path
) -> None:
    image = await provider.build(context)  # USER agent (uid 1234)
    async with await provider.start(image, SPEC) as box:
        assert isinstance(box, RootfsBox)
        planted = await run(box, SETUID_COPY.format(path="/home/agent/sb"))
        assert planted.stdout.startswith(b"-rwsr-xr-x"), planted
        works = await run(box, "id -un; echo ok > /app/still-mine && cat /app/still-mine")
        assert works.stdout.decode().split() == ["agent", "ok"]  # the user still reaches /
        for path in (box.root / "home/agent/sb", box.upper / "home/agent/sb"):
            assert path.exists()
            assert euid_through(path) == ""


# -- the same attacks on the docker provider ----------------------------------------------------


@pytest.fixture(scope="module")
def docker_base() -> Image:
    daemon_or_skip()
    images.docker_base()
    return Image(provider="docker", ref=images.TAGS[0], digest="", workdir="/", env={})


@pytest.fixture
def docker() -> DockerProvider:
    daemon_or_skip()
    return DockerProvider()


async def test_on_docker_a_box_cannot_write_the_kernels_settings(
    docker: DockerProvider, docker_base: Image
) -> None:
    async with await docker.start(docker_base, BoxSpec()) as box:
        wrote = await run(box, SAME_VALUE_BACK, user="root")
    assert wrote.status != 0 and b"Read-only file system" in wrote.stderr, wrote


async def test_on_docker_what_a_box_plants_gives_host_nobody_nothing(
    docker: DockerProvider, docker_base: Image, tmp_path: Path
) -> None:
    with secret_device(tmp_path) as (major, minor):
        async with await docker.start(docker_base, BoxSpec()) as box:
            planted = await run(
                box,
                SETUID_COPY.format(path="/x")
                + f" && mknod /node b {major} {minor} && chmod 666 /node"
                + " && useradd -u 1000 agent && install -d -o agent /home/agent",
                user="root",
            )
            assert planted.status == 0, planted.stderr
            as_agent = await run(box, SETUID_COPY.format(path="/home/agent/sb"), user="agent")
            assert as_agent.status == 0, as_agent.stderr
            assert (box.root / "x").exists()
            assert euid_through(box.root / "x") == ""
            assert euid_through(box.root / "home/agent/sb") == ""
            assert read_as_nobody(box.root / "node") == ""


async def test_on_docker_a_setuid_file_of_the_image_gives_host_nobody_nothing(
    docker: DockerProvider, tmp_path: Path
) -> None:
    (tmp_path / "Dockerfile").write_text(
        f"FROM debian:bookworm-slim\nRUN {SETUID_COPY.format(path='/usr/local/bin/sb')}\n"
    )
    image = await docker.build(tmp_path)
    try:
        async with await docker.start(image, BoxSpec()) as box:
            assert (box.root / "usr/local/bin/sb").stat().st_mode & 0o4000
            assert euid_through(box.root / "usr/local/bin/sb") == ""
    finally:
        subprocess.run(["docker", "rmi", "--force", image.ref], capture_output=True)

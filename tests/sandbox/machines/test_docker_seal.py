"""Sealing a docker box: nothing of the agent runs on, the image's toolchain is back, the
agent's work stays; and a command that ignores its timeout's SIGINT does not end the box."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from palaestra.environment.kinds.machine import Machine
from palaestra.errors import SandboxFailure
from palaestra.sandbox.machines import images
from palaestra.sandbox.machines.container_procs import _container_pids
from palaestra.sandbox.machines.docker import DockerBox, DockerProvider
from palaestra.sandbox.machines.layers import drop_from_upper
from palaestra.sandbox.machines.provider import TOOLCHAIN, BoxSpec, Image
from tests.sandbox.machines.docker_support import daemon_or_skip, run


@pytest.fixture(scope="module")
def base() -> Image:
    daemon_or_skip()
    images.docker_base()
    return Image(provider="docker", ref=images.TAGS[0], digest="", workdir="/", env={})


@pytest.fixture
async def box(base: Image) -> AsyncIterator[DockerBox]:
    box = await DockerProvider().start(base, BoxSpec(memory_mb=512))
    try:
        yield box
    finally:
        await box.close()


async def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


async def test_a_process_that_left_with_no_environment_is_gone_after_seal(
    box: DockerBox,
) -> None:
    started = await run(
        box,
        ["sh", "-c", "setsid env -i sh -c 'while :; do date >> /tmp/alive; sleep 0.1; done' &"],
    )
    assert started.status == 0
    alive = box.root / "tmp" / "alive"
    first = await _size(alive)
    await asyncio.sleep(0.6)
    assert await _size(alive) > first, "the leftover did not outlive its launch"
    before = box.pid
    await box.seal()
    sealed = await _size(alive)
    await asyncio.sleep(0.6)
    assert await _size(box.root / "tmp" / "alive") == sealed, "the leftover still writes"
    assert box.pid != before and len(_container_pids(box.pid)) == 2  # the init and its sleep
    again = await run(box, ["sh", "-c", "cat /tmp/alive | wc -l"])
    assert again.status == 0 and int(again.stdout) > 0  # the agent's file is kept


async def test_seal_puts_the_images_toolchain_back_and_keeps_the_agents_work(
    box: DockerBox,
) -> None:
    forged = await run(
        box,
        [
            "sh",
            "-c",
            "set -e; mkdir -p /app; echo solved > /app/work.txt;"
            " printf '#!/bin/sh\\necho forged\\n' > /bin/bash;"
            " printf '#!/bin/sh\\necho forged\\n' > /usr/bin/python3;"
            " printf '#!/bin/sh\\necho mine\\n' > /usr/local/bin/mytool;"
            " chmod +x /usr/local/bin/mytool;"
            " echo /nonexistent.so > /etc/ld.so.preload;"
            " ln -s /app /usr/local/lib/to-app;"
            " rm -rf /etc/profile.d; mkdir /etc/profile.d;"
            " echo 'echo forged' > /etc/profile.d/x.sh;"
            " bash -c true | grep -q forged",
        ],
    )
    assert forged.status == 0, forged.stderr.decode()
    await box.seal()
    outcome = await run(
        box,
        [
            "/bin/bash",
            "-c",
            'echo "$BASH_VERSION"; command -v python3; python3 -c "print(6*7)";'
            " ls /etc/ld.so.preload /etc/profile.d/x.sh 2>&1 | wc -l; cat /app/work.txt; mytool",
        ],
        env={"PATH": "/usr/bin:/bin:/usr/local/bin"},
    )
    lines = outcome.stdout.decode().splitlines()
    assert lines[0].startswith("5."), outcome  # the image's bash
    assert lines[1:3] == ["/usr/bin/python3", "42"]
    assert lines[3:] == ["2", "solved", "mine"]  # no preload, no profile.d/x.sh; work kept
    assert outcome.stderr == b""  # no ld.so complaint about a preload
    assert (box.root / "app" / "work.txt").read_text() == "solved\n"


def test_restore_removes_what_hides_the_images_directory_and_follows_no_link(
    tmp_path: Path,
) -> None:
    upper, outside = tmp_path / "upper", tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("kept")
    (upper / "etc").mkdir(parents=True)
    (upper / "etc" / "ld.so.preload").write_text("/tmp/forge.so\n")
    (upper / "etc" / "hostname").write_text("mine\n")
    (upper / "usr").symlink_to(outside)  # /usr replaced by a link elsewhere
    (upper / "lib").mkdir()
    (upper / "lib" / "link").symlink_to(outside)
    os.mkfifo(upper / "bin")
    if os.geteuid() == 0:
        os.setxattr(upper / "etc", "trusted.overlay.opaque", b"y")
    drop_from_upper(upper, TOOLCHAIN)
    assert sorted(os.listdir(upper)) == ["etc"]
    assert sorted(os.listdir(upper / "etc")) == ["hostname"]  # not a toolchain entry: kept
    assert (outside / "keep").read_text() == "kept"
    if os.geteuid() == 0:
        with pytest.raises(OSError):
            os.getxattr(upper / "etc", "trusted.overlay.opaque")


async def test_a_command_that_ignores_sigint_past_its_timeout_leaves_the_box_usable(
    base: Image,
) -> None:
    box = await DockerProvider().start(base, BoxSpec(memory_mb=512))
    machine = Machine(box=box)
    try:
        stuck = await machine.run("trap '' INT; sleep 100", timeout=2)
        assert stuck.timed_out and stuck.interrupted == "killed", stuck.text()
        after = await machine.run("echo still here")
        assert after.head == "still here\n", after.text()
        await box.seal()
        checked = await machine.check("echo verified", user="root")
        assert (checked.status, checked.head) == (0, "verified\n")
    finally:
        await machine.close()


async def test_seal_of_a_closed_box_fails(base: Image) -> None:
    box = await DockerProvider().start(base, BoxSpec())
    await box.close()
    with pytest.raises(SandboxFailure, match="closed"):
        await box.seal()
    assert subprocess.run(["docker", "inspect", box.container], capture_output=True).returncode

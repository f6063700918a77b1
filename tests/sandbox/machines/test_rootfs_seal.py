"""``RootfsBox.seal``: nothing of the agent runs after it, the image's tools are back, the
agent's work is kept, and what the box planted in its layer never leads the host astray."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from palaestra.errors import SandboxFailure
from palaestra.sandbox.limits import Limits
from palaestra.sandbox.machines.provider import BoxSpec
from palaestra.sandbox.machines.rootfs import RootfsBox, RootfsProvider
from palaestra.sandbox.process import Outcome, supervise

SPEC = BoxSpec(memory_mb=512, start_timeout=60)
TAMPER = r"""
set -e
printf '#!/bin/sh\necho forged\n' > /bin/bash
printf '#!/bin/sh\necho forged\n' > /usr/local/bin/python3 && chmod 755 /usr/local/bin/python3
echo /nowhere/forge.so > /etc/ld.so.preload
rm /etc/bash.bashrc
rm -rf /etc/profile.d && mkdir /etc/profile.d && echo 'echo forged' > /etc/profile.d/forge.sh
echo solved > /app/answer.txt && echo kept > /root/notes
(setsid env -i /bin/sh -c 'while :; do echo tick >> /root/tick; sleep 0.1; done' \
    </dev/null >/dev/null 2>&1 &)
exec sleep 300
"""
"""A root agent rewrites the verifier's tools and leaves a daemon that sheds its session,
its environment and its parent, then idles in its shell."""


async def run(box: RootfsBox, script: str, *, user: str | None = "root") -> Outcome:
    process = await box.launch(["sh", "-c", script], stdin=subprocess.DEVNULL, user=user)
    try:
        return await supervise(process, Limits(wall_time=60))
    finally:
        process.close()


async def size_settles(path: Path, wait: float = 0.5) -> bool:
    """Whether ``path`` stops growing (no process appends to it any more)."""
    before = path.stat().st_size
    await asyncio.sleep(wait)
    return path.stat().st_size == before


@pytest.mark.parametrize("cgroups", [True, False], ids=["by-cgroup", "by-pid-namespace"])
async def test_seal_kills_the_agents_daemon_and_puts_the_images_tools_back(
    provider: RootfsProvider, context: Path, cgroups: bool
) -> None:
    provider.prepare()
    if not cgroups:  # a machine without cgroups: each launch's pid namespace is what is killed
        assert provider._cgroups is not None
        provider._cgroups.memory = provider._cgroups.pids = provider._cgroups.cpu = None
    image = await provider.build(context)
    async with await provider.start(image, SPEC) as box:
        assert isinstance(box, RootfsBox) and bool(box.cgroups) is cgroups
        image_bash = await run(box, "sha256sum /usr/bin/bash; ls /etc/profile.d")
        agent = await box.launch(["sh", "-c", TAMPER], stdin=subprocess.DEVNULL, user="root")
        tick = box.root / "root/tick"
        for _ in range(100):
            if tick.exists() and tick.stat().st_size > 20:
                break
            await asyncio.sleep(0.1)
        assert not await size_settles(tick)  # the daemon runs
        forged = await run(box, "bash -c 'echo real'")
        assert forged.stdout == b"forged\n"

        await box.seal()

        assert await asyncio.wait_for(agent.wait(), 10) != 0
        agent.close()
        assert await size_settles(tick)  # nothing writes it any more
        for cgroup in box.cgroups:
            assert (cgroup / "cgroup.procs").read_text() == ""
        after = await run(
            box,
            "sha256sum /usr/bin/bash; ls /etc/profile.d; bash -c 'echo real'; "
            "test ! -e /usr/local/bin/python3 && test ! -e /etc/ld.so.preload && "
            "test -f /etc/bash.bashrc && cat /app/answer.txt /root/notes",
        )
        assert after.status == 0, after.stderr
        assert after.stderr == b""  # no preload error from the dynamic loader
        assert after.stdout == image_bash.stdout + b"real\nsolved\nkept\n"
        again = await run(box, "echo works", user=None)  # the image's user, too
        assert again.stdout == b"works\n"


async def test_seal_removes_links_the_box_planted_without_following_them(
    provider: RootfsProvider, context: Path, tmp_path: Path
) -> None:
    host_file = tmp_path / "host-file"
    host_file.write_text("the host's\n")
    host_dir = tmp_path / "host-dir"
    (host_dir / "inside").mkdir(parents=True)
    (host_dir / "inside" / "data").write_text("the host's too\n")
    image = await provider.build(context)
    async with await provider.start(image, SPEC) as box:
        assert isinstance(box, RootfsBox)
        # what an agent could leave in its layer: links out of the box at TOOLCHAIN paths
        (box.upper / "usr").symlink_to("/")
        (box.upper / "lib64").symlink_to(host_dir)
        (box.upper / "etc").mkdir()
        (box.upper / "etc" / "ld.so.preload").symlink_to("/etc/passwd")
        (box.upper / "etc" / "alternatives").symlink_to(host_dir)
        (box.upper / "etc" / "profile.d").symlink_to(host_dir / "inside")
        await box.seal()
        works = await run(box, "test -x /usr/bin/bash && test ! -e /etc/ld.so.preload && echo ok")
    assert works.stdout == b"ok\n", works.stderr
    assert host_file.read_text() == "the host's\n"
    assert (host_dir / "inside" / "data").read_text() == "the host's too\n"
    assert Path("/etc/passwd").stat().st_size > 0 and Path("/usr/bin").is_dir()


async def test_a_closed_box_cannot_be_sealed(provider: RootfsProvider, context: Path) -> None:
    image = await provider.build(context)
    box = await provider.start(image, SPEC)
    await box.close()
    with pytest.raises(SandboxFailure, match="closed"):
        await box.seal()

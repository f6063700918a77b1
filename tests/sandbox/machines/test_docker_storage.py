"""``storage_mb`` holds on docker: a writer past it gets ENOSPC (a quota) or is killed (the
watch), and the host disk holds about the bound, not what the box tried to write."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from palaestra.sandbox.machines import images
from palaestra.sandbox.machines.docker import DockerProvider
from palaestra.sandbox.machines.provider import BoxSpec, Image
from palaestra.sandbox.machines.storage import LayerWatch, layer_bytes
from tests.sandbox.machines.docker_support import daemon_or_skip, run

SLACK = 32 << 20
"""What a writer may add past the bound before the watch kills it (one look's worth)."""


@pytest.fixture(scope="module")
def base() -> Image:
    daemon_or_skip()
    images.docker_base()
    return Image(provider="docker", ref=images.TAGS[0], digest="", workdir="/", env={})


@pytest.mark.parametrize(
    "writer",
    [
        "dd if=/dev/zero of=/big bs=1M count=200",
        "exec 3>/tmp/hidden; rm /tmp/hidden; dd if=/dev/zero bs=1M count=200 >&3",
        "for i in $(seq 40); do dd if=/dev/zero of=/f$i bs=1M count=5 || exit; done",
    ],
    ids=["a file", "a deleted file held open", "many files"],
)
async def test_a_box_writing_past_its_storage_is_stopped_and_the_host_disk_is_bounded(
    base: Image, writer: str
) -> None:
    box = await DockerProvider().start(base, BoxSpec(storage_mb=64))
    try:
        wrote = await run(box, ["sh", "-c", f"{writer} && sleep 5"], wall_time=120)
        assert wrote.status != 0, "200 MB were written in a box of 64 MB"
        stopped = (b"No space left on device", b"File size limit exceeded")
        assert any(why in wrote.stderr for why in stopped) or box.full is not None
        assert box.upper is not None and layer_bytes(box.upper) <= (64 << 20) + SLACK
        assert (await run(box, ["echo", "still usable"])).stdout == b"still usable\n"
        await box.seal()
        assert (await run(box, ["sh", "-c", "rm -f /big; echo verified"])).status == 0
    finally:
        await box.close()


async def test_the_watch_leaves_alone_a_full_box_that_writes_no_more(tmp_path: Path) -> None:
    upper = tmp_path / "upper"
    upper.mkdir()
    fulls: list[int] = []
    watch = LayerWatch(upper, 1 << 20, fulls.append, interval=0.01)

    async def settled(count: int) -> int:
        for _ in range(200):
            if len(fulls) >= count:
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)  # and no more after it
        return len(fulls)

    try:
        (upper / "a").write_bytes(b"x" * (2 << 20))
        assert await settled(1) == 1 and fulls[0] >= 2 << 20  # over: killed once
        assert await settled(2) == 1  # nothing grew: left alone
        (upper / "b").write_bytes(b"x" * (2 << 20))
        assert await settled(2) == 2  # it grew while over
        (upper / "a").unlink()
        (upper / "b").unlink()
        await asyncio.sleep(0.3)
        (upper / "c").write_bytes(b"x" * (512 << 10))  # under the bound again
        assert await settled(3) == 2
    finally:
        watch.stop()

"""``BoxSpec.storage_mb`` on the rootfs provider: a box writes that much and no more."""

from __future__ import annotations

import subprocess
from pathlib import Path

from palaestra.sandbox.limits import Limits
from palaestra.sandbox.machines.provider import BoxSpec
from palaestra.sandbox.machines.rootfs import RootfsBox, RootfsProvider
from palaestra.sandbox.process import Outcome, supervise


async def run(box: RootfsBox, script: str) -> Outcome:
    process = await box.launch(["sh", "-c", script], stdin=subprocess.DEVNULL, user="root")
    try:
        return await supervise(process, Limits(wall_time=120))
    finally:
        process.close()


async def test_a_box_writing_past_its_storage_gets_enospc_and_still_works(
    provider: RootfsProvider, context: Path
) -> None:
    image = await provider.build(context)
    async with await provider.start(image, BoxSpec(memory_mb=512, storage_mb=64)) as box:
        assert isinstance(box, RootfsBox)
        filled = await run(box, "dd if=/dev/zero of=/root/big bs=1M count=200 2>&1")
        assert filled.status != 0
        assert b"No space left on device" in filled.stdout, filled.stdout
        disk = box.directory / "disk.img"
        assert disk.stat().st_blocks * 512 <= 66 << 20  # what the host's disk paid
        assert box.bytes_written() <= 64 << 20
        await box.seal()
        after = await run(box, "rm /root/big && echo room > /root/again && cat /root/again")
        assert (after.status, after.stdout) == (0, b"room\n"), after.stderr

"""No container of ours outlives its owner: unclosed boxes go with their object or process,
a killed owner's are reaped by the next provider, and nobody else's are ever touched."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from palaestra.sandbox.machines import images
from palaestra.sandbox.machines.docker import DockerProvider
from palaestra.sandbox.machines.provider import BoxSpec, Image
from tests.sandbox.machines.docker_support import container_exists, daemon_or_skip

CHILD_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


@pytest.fixture(scope="module")
def base() -> Image:
    daemon_or_skip()
    images.docker_base()
    return Image(provider="docker", ref=images.TAGS[0], digest="", workdir="/", env={})


@pytest.fixture
def removed_after() -> Iterator[list[str]]:
    """Containers a test made: removed at its end whatever it asserted."""
    made: list[str] = []
    yield made
    if made:
        subprocess.run(["docker", "rm", "--force", *made], capture_output=True)


async def test_a_box_dropped_without_close_is_removed_with_it(
    base: Image, removed_after: list[str]
) -> None:
    box = await DockerProvider().start(base, BoxSpec())
    container = box.container
    removed_after.append(container)
    del box  # before: the container ran on until this process died and a provider reaped it
    gc.collect()
    assert not container_exists(container)


_EXITS_OPEN = """
import asyncio, os, subprocess, sys
from palaestra.sandbox.machines.docker import DockerProvider
from palaestra.sandbox.machines.provider import BoxSpec, Image

async def main():
    return await DockerProvider().start(Image("docker", sys.argv[1], ""), BoxSpec())

box = asyncio.run(main())
print(box.container, flush=True)
child = os.fork()
if child == 0:
    sys.exit(0)  # a forked child's exit runs our finalizers too: they must leave the box
os.waitpid(child, 0)
seen = subprocess.run(["docker", "inspect", box.container], capture_output=True)
print("kept" if seen.returncode == 0 else "removed", flush=True)
"""


def test_a_process_that_exits_with_a_box_open_leaves_no_container(
    base: Image, removed_after: list[str]
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _EXITS_OPEN, base.ref],
        capture_output=True,
        text=True,
        timeout=120,
        env=CHILD_ENV,
    )
    assert done.returncode == 0, done.stderr
    container, after_fork = done.stdout.split()
    removed_after.append(container)
    assert after_fork == "kept"  # its forked child exited: the parent's box stayed
    assert not container_exists(container)  # before: left for a later provider to reap


_OWNER = """
import asyncio, sys
from palaestra.sandbox.machines.docker import DockerProvider
from palaestra.sandbox.machines.provider import BoxSpec, Image

async def main():
    box = await DockerProvider().start(Image("docker", sys.argv[1], ""), BoxSpec())
    print(box.container, flush=True)
    await asyncio.sleep(1000)

asyncio.run(main())
"""


async def test_a_live_owners_box_stays_and_is_reaped_once_it_is_killed(
    base: Image, removed_after: list[str]
) -> None:
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, base.ref], stdout=subprocess.PIPE, env=CHILD_ENV
    )
    try:
        assert owner.stdout is not None
        theirs = (await asyncio.to_thread(owner.stdout.readline)).decode().strip()
        removed_after.append(theirs)
        async with await DockerProvider().start(base, BoxSpec()):  # reaps as it starts
            assert container_exists(theirs)
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        if owner.stdout is not None:
            owner.stdout.close()
    async with await DockerProvider().start(base, BoxSpec()):
        assert not container_exists(theirs)


def test_reaping_never_removes_a_container_palaestra_did_not_start(
    base: Image, removed_after: list[str]
) -> None:
    started = subprocess.run(
        ["docker", "run", "--detach", "--network", "none", base.ref, "sleep", "600"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode == 0, started.stderr
    container = started.stdout.strip()
    removed_after.append(container)
    DockerProvider().reap()
    assert container_exists(container)

"""The file editor over a real box: what the agent made there is never opened unless it is a
regular file (a FIFO's writer stays blocked, a device is never opened), on both providers."""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from palaestra.environment.kinds.machine import Machine
from palaestra.errors import ConfigError, ToolError
from palaestra.sandbox.machines.provider import BoxSpec, Provider
from palaestra.sandbox.machines.registry import make_provider
from palaestra.sandbox.machines.rootfs import RootfsProvider

SPEC = BoxSpec(memory_mb=512, start_timeout=60)


@pytest.fixture(params=["rootfs", "docker"])
def machines(request: pytest.FixtureRequest) -> Provider:
    """Each provider that can run here (docker skipped, saying why, without a daemon)."""
    if request.param == "rootfs":
        provider: RootfsProvider = request.getfixturevalue("provider")
        return provider
    try:
        docker = make_provider("docker")
    except ConfigError as error:
        pytest.skip(f"no docker provider: {error}")
    problem = docker.problem()
    if problem is not None:
        pytest.skip(f"docker cannot run here: {problem}")
    return docker


@pytest.fixture
async def machine(machines: Provider, context: Path) -> AsyncIterator[Machine]:
    image = await machines.build(context)
    machine = Machine(box=await machines.start(image, SPEC))
    yield machine
    await machine.close()


async def test_a_fifo_in_the_box_is_not_opened_by_the_editor(machine: Machine) -> None:
    await machine.ready()
    box = machine.box
    assert box is not None
    made = await machine.run("mkfifo /app/pipe && echo made")
    assert made.head == "made\n"
    # The agent's writer blocks until someone opens the FIFO for reading.
    writer = await box.launch(
        ["bash", "-c", "echo secret > /app/pipe; echo done > /app/written"],
        stdin=subprocess.DEVNULL,
    )
    try:
        await asyncio.sleep(0.5)
        editor = machine.editor
        attempts: list[Callable[[], str]] = [
            lambda: editor.view("pipe"),
            lambda: editor.view("/app/pipe", [1, 1]),
            lambda: editor.str_replace("pipe", "secret", "other"),
            lambda: editor.insert("pipe", 0, "x"),
        ]
        refusals: list[str] = []
        for attempt in attempts:
            with pytest.raises(ToolError) as refused:
                attempt()
            refusals.append(str(refused.value))
        await asyncio.sleep(1.0)
        assert not (box.root / "app" / "written").exists(), "the editor woke the writer"
        assert writer.popen.poll() is None  # still blocked in its open
        assert refusals == [
            "/app/pipe is a FIFO (named pipe), not a regular file: the editor opens only "
            "regular files"
        ] * len(attempts)
    finally:
        await writer.stop()
        writer.close()


async def test_a_device_node_in_the_box_is_refused_by_the_editor(machine: Machine) -> None:
    await machine.ready()
    box = machine.box
    assert box is not None
    made = await machine.check("mknod /app/null c 1 3 && echo made", user="root")
    if made.head != "made\n":  # a box that forbids mknod: the host makes the node
        os.mknod(box.root / "app" / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    assert stat.S_ISCHR(os.lstat(box.root / "app" / "null").st_mode)
    with pytest.raises(ToolError, match=r"/app/null is a character device, not a regular file"):
        machine.editor.view("null")
    with pytest.raises(ToolError, match=r"/app/null is a character device, not a regular file"):
        machine.editor.str_replace("/app/null", "a", "b")
    with pytest.raises(ToolError, match="already exists"):
        machine.editor.create("null", "x")
    assert "/app/null" in machine.editor.view("/app")  # listed, never opened

"""The machine tools over a box of the rootfs provider: the same shell, editor and check."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from palaestra import LocalEnvironmentClient
from palaestra.environment.base import Environment
from palaestra.environment.kinds.machine import Machine, MachineTools
from palaestra.environment.sessions import Session
from palaestra.sandbox.machines.provider import Box, BoxSpec, Image
from palaestra.sandbox.machines.rootfs import RootfsBox, RootfsProvider
from palaestra.types import JsonDict, Verdict

SPEC = BoxSpec(memory_mb=512, start_timeout=60)


@pytest.fixture
async def image(provider: RootfsProvider, context: Path) -> Image:
    return await provider.build(context)


@pytest.fixture
async def machine(provider: RootfsProvider, image: Image) -> AsyncIterator[Machine]:
    machine = Machine(box=await provider.start(image, SPEC), head_bytes=300, tail_bytes=200)
    yield machine
    await machine.close()


async def test_a_machine_over_a_box_keeps_its_shell_state_as_the_images_user(
    machine: Machine,
) -> None:
    first = await machine.run("mkdir sub && cd sub && export KEPT=yes && echo x > f.txt")
    assert first.text() == "[exit status 0]"
    second = await machine.run('pwd; id -un; echo "$KEPT $MODE"; cat f.txt; ls /tests 2>&1')
    assert second.text().splitlines()[:4] == ["/app/sub", "agent", "yes test", "x"]
    timed = await machine.run("sleep 30", timeout=1)
    assert timed.timed_out and (await machine.run("pwd")).head == "/app/sub\n"


async def test_the_editor_works_on_the_box_and_check_sees_its_files(machine: Machine) -> None:
    await machine.ready()
    editor = machine.editor
    assert "print('main')" in editor.view("main.py")  # relative to the image's workdir
    editor.create("made.txt", "made by the editor\n")
    editor.create("/tmp/elsewhere/x.txt", "anywhere in the box\n")
    assert machine.box is not None
    made = machine.box.root / "app" / "made.txt"
    assert (os.stat(made).st_uid, os.stat(made).st_gid) == (1234, 1234)  # the image's agent
    await machine.run("cd /tmp; cat() { echo fake; }")
    checked = await machine.check("pwd; cat made.txt /tmp/elsewhere/x.txt; exit 3")
    assert checked.status == 3
    assert checked.head == "/app\nmade by the editor\nanywhere in the box\n"
    as_root = await machine.check("id -un; rm /etc/hostname && echo removed", user="root")
    assert (as_root.status, as_root.head) == (0, "root\nremoved\n")


async def test_closing_the_machine_closes_its_box(
    provider: RootfsProvider, image: Image, runtime: Path
) -> None:
    box = await provider.start(image, SPEC)
    machine = Machine(box=box)
    await machine.run("sleep 300 &")
    await machine.close()
    assert isinstance(box, RootfsBox) and not box.directory.exists()
    assert list(runtime.iterdir()) == []


class BoxedToy(MachineTools, Environment):
    """A task whose machine is an image: a box per rollout from the rootfs provider."""

    name = "boxed_toy"

    def __init__(self, provider: RootfsProvider, image: Image) -> None:
        super().__init__()
        self.provider = provider
        self.image = image

    async def machine_box(self, task: JsonDict) -> Box | None:
        return await self.provider.start(self.image, SPEC)

    def machine_files(self, task: JsonDict) -> dict[str, str | bytes]:
        return {"README": "write hello.txt\n"}

    async def verify(self, session: Session, response: JsonDict) -> Verdict:
        result = await self.machine_of(session).check("cat /app/hello.txt", timeout=10)
        return Verdict(1.0 if result.head == "hello world\n" else 0.0)


async def test_the_machine_tools_run_over_a_box_an_environment_supplies(
    provider: RootfsProvider, image: Image, runtime: Path
) -> None:
    env = LocalEnvironmentClient(BoxedToy(provider, image))
    task: JsonDict = {"responses_create_params": {"input": []}}
    try:
        session = await env.seed(task)
        shown = await env.call_tool(session, "bash", {"command": "cat README; pwd"})
        assert shown == "write hello.txt\n/app\n[exit status 0]"
        await env.call_tool(
            session,
            "str_replace_editor",
            {"command": "create", "path": "hello.txt", "file_text": "hello world\n"},
        )
        verdict = await env.verify(session, task, {})
        assert verdict.reward == 1.0
        await env.close(session)
        assert list(runtime.iterdir()) == []
    finally:
        await env.aclose()

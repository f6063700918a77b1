"""``{box_exec}``: a harness on the host runs commands in a real ``terminal`` box (rootfs)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from palaestra import LocalEnvironmentClient
from palaestra.agents.box_exec import FAILED, TIMED_OUT, BoxExec, has_box, parsed
from palaestra.envs.terminal.environment import Terminal
from palaestra.types import JsonDict

pytestmark = pytest.mark.usefixtures("default_rootfs")


def _task(name: str) -> JsonDict:
    rows = Terminal.example_tasks_file()
    assert rows is not None
    for line in rows.read_text().splitlines():
        row: JsonDict = json.loads(line)
        if row["harbor_task"] == name:
            return row
    raise AssertionError(name)


@pytest.fixture
async def box(tmp_path: Path) -> AsyncIterator[BoxExec]:
    client = LocalEnvironmentClient(Terminal())
    session = await client.seed(_task("permissions-000-modes"))
    try:
        async with BoxExec(client, session, tmp_path, timeout=5) as served:
            yield served
    finally:
        await client.close(session)
        await client.aclose()


async def _shell(command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(
        subprocess.run, ["bash", "-c", command], capture_output=True, text=True, timeout=timeout
    )


async def test_a_command_through_box_exec_runs_in_the_box_and_gives_its_output_and_status(
    box: BoxExec,
) -> None:
    marker = f"only-on-the-host-{os.getpid()}"
    Path("/tmp", marker).write_text("host")
    try:
        ran = await _shell(
            f"{box.prefix} 'cat /etc/hostname >/dev/null; ls /tmp; echo out; exit 3'"
        )
    finally:
        Path("/tmp", marker).unlink()
    assert ran.returncode == 3
    assert ran.stdout.endswith("out\n")
    assert marker not in ran.stdout  # the box's /tmp, not the host's
    assert box.commands == 1


async def test_nothing_one_box_command_sets_reaches_the_next(box: BoxExec) -> None:
    first = await _shell(f"{box.prefix} 'pwd; cd /etc; export FOO=set; exit 0'")
    then = await _shell(f"{box.prefix} 'pwd; echo \"[$FOO]\"'")
    assert (first.returncode, then.returncode) == (0, 0)
    assert then.stdout == f"{first.stdout}[]\n"  # the same directory, no variable


async def test_files_a_box_command_writes_are_seen_by_the_next(box: BoxExec) -> None:
    write = await _shell(f"{box.prefix} 'echo kept > /tmp/note.txt'")
    assert write.returncode == 0
    ran = await _shell(f"{box.prefix} cat /tmp/note.txt")
    assert (ran.returncode, ran.stdout) == (0, "kept\n")


async def test_a_box_command_past_its_timeout_exits_124(box: BoxExec) -> None:
    ran = await _shell(f"{box.prefix} sleep 30")
    assert ran.returncode == TIMED_OUT
    assert "timed out" in ran.stdout


async def test_the_docker_stand_in_runs_exec_in_the_box_in_its_directory(box: BoxExec) -> None:
    started = await _shell(f"{box.docker_executable} run -d --name x -w . image sleep 2h")
    assert started.returncode == 0
    name = started.stdout.strip()
    ran = await _shell(
        f"{box.docker_executable} exec -w /etc -e GREETING='hi there' {name} "
        "bash -lc 'pwd; echo \"$GREETING\"'"
    )
    assert (ran.returncode, ran.stdout) == (0, "/etc\nhi there\n")
    stopped = await _shell(f"{box.docker_executable} stop {name}")
    assert stopped.returncode == 0


async def test_a_closed_box_exec_answers_255_with_a_reason(tmp_path: Path) -> None:
    client = LocalEnvironmentClient(Terminal())
    session = await client.seed(_task("permissions-000-modes"))
    try:
        async with BoxExec(client, session, tmp_path, timeout=5) as served:
            prefix = served.prefix
    finally:
        await client.close(session)
        await client.aclose()
    ran = await _shell(f"{prefix} true")
    assert ran.returncode == FAILED
    assert "cannot be reached" in ran.stderr


def test_a_terminal_environment_has_a_box() -> None:
    assert has_box(LocalEnvironmentClient(Terminal()))


@pytest.mark.parametrize(
    ("text", "status", "output"),
    [
        ("[exit status 0]", 0, ""),
        ("a\nb\n[exit status 2]", 2, "a\nb\n"),
        ("killed\n[exit status -9]", 137, "killed\n"),
        ("x\n[timed out after 5 s: it was interrupted (SIGINT)]\n[exit status 130]", 124, None),
    ],
)
def test_the_bash_tools_closing_line_is_the_commands_status(
    text: str, status: int, output: str
) -> None:
    assert parsed(text)[0] == status
    assert output is None or parsed(text)[1] == output


def test_a_tool_answer_without_a_status_is_a_failure_with_its_words() -> None:
    assert parsed("You already submitted") == (FAILED, "", "You already submitted")

"""The machine tools on a real bubblewrap sandbox: shell, editor, submit and the mixin."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import ClassVar

import orjson
import pytest

from palaestra import LocalEnvironmentClient, ToolCallingAgent
from palaestra.environment.base import Environment
from palaestra.environment.kinds.machine import Machine, MachineTools
from palaestra.environment.kinds.machine.shell import ShellResult
from palaestra.environment.sessions import Session
from palaestra.errors import ToolCallRejected, ToolError
from palaestra.models.openai.responses import OpenAIResponsesModel
from palaestra.sandbox import Limits, Sandbox, isolation
from palaestra.sandbox.workdir import PREFIX
from palaestra.types import JsonDict, Verdict
from tests.sandbox.conftest import RecordedUidPool, leftovers, new_leftovers
from tests.support.fake_model import outputs_so_far
from tests.support.scripted_model import (
    ScriptedModelServer,
    Sequence,
    text_response,
    tool_call_response,
)

LIMITS = Limits(wall_time=30, cpu_time=60, processes=64, disk_mb=64)


@pytest.fixture(autouse=True)
def _no_leaks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(isolation, "UidPool", RecordedUidPool)
    before = set(leftovers())
    yield
    assert new_leftovers(before) == [], "the test left processes behind"
    assert list(Path(tempfile.gettempdir()).glob(f"{PREFIX}{os.getpid()}-*")) == []


@pytest.fixture
async def machine() -> AsyncIterator[Machine]:
    machine = Machine(Sandbox(LIMITS, isolation="bubblewrap"), head_bytes=300, tail_bytes=200)
    yield machine
    await machine.close()


async def test_cwd_variables_and_files_persist_between_commands(machine: Machine) -> None:
    first = await machine.run("mkdir -p sub && cd sub && export GREETING=hi && echo x > f.txt")
    assert (first.status, first.text()) == (0, "[exit status 0]")
    second = await machine.run('pwd; echo "$GREETING"; cat f.txt; echo oops >&2; false')
    assert second.text() == "/work/sub\nhi\nx\noops\n[exit status 1]"


async def test_a_command_past_its_timeout_is_interrupted_and_the_shell_lives_on(
    machine: Machine,
) -> None:
    await machine.run("export KEPT=yes; cd /tmp")
    slow = await machine.run("echo start; sleep 60; echo never", timeout=1)
    assert slow.timed_out and slow.interrupted == "SIGINT" and slow.ended is None
    assert (
        slow.text()
        == "start\n[timed out after 1 s: it was interrupted (SIGINT)]\n[exit status 130]"
    )
    after = await machine.run("echo $KEPT; pwd")
    assert after.text() == "yes\n/tmp\n[exit status 0]"


async def test_a_command_that_ignores_sigint_is_killed_and_a_new_shell_keeps_the_files(
    machine: Machine,
) -> None:
    await machine.run("export GONE=1; echo data > kept.txt")
    stuck = await machine.run("trap '' INT; while :; do sleep 0.1; done", timeout=1)
    assert stuck.timed_out and stuck.interrupted == "killed"
    assert "did not stop on SIGINT and was killed" in stuck.text()
    assert "the shell was killed" in stuck.text() and "files are kept" in stuck.text()
    after = await machine.run('echo "[$GONE]"; cat kept.txt; pwd')
    assert after.text() == "[]\ndata\n/work\n[exit status 0]"
    assert machine.restarts == 1


async def test_huge_output_keeps_head_and_tail_and_says_how_much_was_dropped(
    machine: Machine,
) -> None:
    result = await machine.run("seq 1 100000")
    total = sum(len(f"{n}\n") for n in range(1, 100001))
    assert result.total == total and result.dropped == total - 500
    text = result.text()
    assert text.startswith("1\n2\n3\n") and text.endswith("99999\n100000\n[exit status 0]")
    assert f"[... {total - 500} bytes of output dropped (of {total}) ...]" in text
    assert len(text) < 700


async def test_exit_ends_the_shell_with_a_note_and_the_next_command_gets_a_new_one(
    machine: Machine,
) -> None:
    ended = await machine.run("cd /tmp; exit 3")
    assert ended.status is None and ended.ended is not None
    assert ended.text().startswith("[the shell exited with status 3;")
    assert (await machine.run("pwd")).text() == "/work\n[exit status 0]"


async def test_close_kills_the_shell_and_what_it_started() -> None:
    machine = Machine(Sandbox(LIMITS, isolation="bubblewrap"))
    before = set(leftovers())
    await machine.run("sleep 300 & echo started")
    assert new_leftovers(before, grace=0) != []  # bwrap, the supervisor, bash, sleep
    work = machine.work_dir.base
    await machine.close()
    assert new_leftovers(before) == []
    assert not work.exists()


def test_shell_result_text_without_output_or_status() -> None:
    assert ShellResult("", "", 0, None, 5.0).text() == "(no output)"


# The editor


async def test_editor_view_create_and_the_file_is_the_shells_too(machine: Machine) -> None:
    editor = machine.editor
    assert editor.create("/work/pkg/app.py", "a = 1\nb = 2\n") == (
        "File created successfully at: /work/pkg/app.py"
    )
    with pytest.raises(ToolError, match=re.escape("File already exists at: /work/pkg/app.py")):
        editor.create("pkg/app.py", "x")
    assert editor.view("pkg/app.py") == (
        "Here's the result of running `cat -n` on /work/pkg/app.py:\n     1\ta = 1\n     2\tb = 2"
    )
    assert editor.view("/work/pkg/app.py", [2, -1]).endswith("\n     2\tb = 2")
    with pytest.raises(ToolError, match="out of range"):
        editor.view("/work/pkg/app.py", [3, 4])
    listing = editor.view("/work")
    assert listing.splitlines()[1:] == ["/work", "/work/pkg/", "/work/pkg/app.py"]
    shell = await machine.run("echo 'c = 3' >> pkg/app.py && python3 pkg/app.py && echo ran")
    assert shell.text() == "ran\n[exit status 0]"  # the sandbox uid owns what the editor made


async def test_str_replace_needs_exactly_one_occurrence(machine: Machine) -> None:
    editor = machine.editor
    editor.create("m.py", "x = 1\ny = 1\nz = 2\n")
    with pytest.raises(ToolError, match=re.escape("did not appear verbatim in /work/m.py")):
        editor.str_replace("m.py", "w = 1", "w = 2")
    with pytest.raises(ToolError, match=r"occurs 2 times in /work/m.py \(starting on lines 1, 2\)"):
        editor.str_replace("m.py", "= 1", "= 5")
    out = editor.str_replace("m.py", "y = 1", "y = 10")
    assert out.startswith("The file /work/m.py has been edited.") and "     2\ty = 10" in out
    assert (await machine.run("cat m.py")).text() == "x = 1\ny = 10\nz = 2\n[exit status 0]"
    editor.undo_edit("m.py")
    assert (await machine.run("cat m.py")).head == "x = 1\ny = 1\nz = 2\n"


async def test_insert_after_a_line_and_at_the_top(machine: Machine) -> None:
    editor = machine.editor
    editor.create("i.txt", "one\nthree\n")
    editor.insert("i.txt", 1, "two")
    editor.insert("/work/i.txt", 0, "zero\n")
    assert (await machine.run("cat i.txt")).head == "zero\none\ntwo\nthree\n"
    with pytest.raises(ToolError, match="insert_line 9 is out of range"):
        editor.insert("i.txt", 9, "x")


async def test_paths_escaping_the_work_dir_are_refused_links_included(machine: Machine) -> None:
    editor = machine.editor
    for path in ("/etc/passwd", "../x", "/work/../etc/passwd", "/workother/f"):
        with pytest.raises(ToolError, match="outside the work dir /work: refused"):
            editor.view(path)
    await machine.run("ln -s /etc/passwd link.txt && ln -s / root && mkdir d && echo s > d/s")
    with pytest.raises(ToolError, match=re.escape("'link.txt' is a symbolic link")):
        editor.view("link.txt")
    with pytest.raises(ToolError, match=re.escape("'root' is a symbolic link")):
        editor.view("/work/root/etc/passwd")
    with pytest.raises(ToolError, match=re.escape("'root' is a symbolic link")):
        editor.create("/work/root/tmp/evil", "x")
    with pytest.raises(ToolError, match=re.escape("'link.txt' is a symbolic link")):
        editor.str_replace("link.txt", "root", "toor")
    assert "s" in editor.view("d/s")


# The mixin in a rollout


class Toy(MachineTools, Environment):
    """Writes a greeting file with the machine tools."""

    name = "toy_machine"
    machine_limits: ClassVar[Limits] = LIMITS

    def machine_files(self, task: JsonDict) -> dict[str, str | bytes]:
        return {"README": "write hello.txt\n"}

    async def verify(self, session: Session, response: JsonDict) -> Verdict:
        result = await self.machine_of(session).check("cat hello.txt", timeout=10)
        reward = 1.0 if result.status == 0 and result.head == "hello world\n" else 0.0
        state = session.state
        return Verdict(reward, metrics={"submitted": state.submitted, "edits": state.edits})


def tool_script(calls: list[tuple[str, JsonDict]]) -> Sequence:
    replies = [
        tool_call_response(name, orjson.dumps(arguments).decode(), call_id=f"c{index}")
        for index, (name, arguments) in enumerate(calls)
    ]
    return Sequence([*replies, text_response("done")])


async def test_a_rollout_with_the_mixin_and_a_scripted_model_verified_by_a_file() -> None:
    calls: list[tuple[str, JsonDict]] = [
        ("bash", {"command": "cat README && mkdir out && cd out"}),
        (
            "str_replace_editor",
            {"command": "create", "path": "/work/hello.txt", "file_text": "hello there\n"},
        ),
        (
            "str_replace_editor",
            {
                "command": "str_replace",
                "path": "/work/hello.txt",
                "old_str": "there",
                "new_str": "world",
            },
        ),
        ("bash", {"command": "pwd && cat ../hello.txt"}),
        ("bash", {"command": "cat() { echo hello world; }; sleep 300 &"}),
        ("submit", {}),
        ("bash", {"command": "echo too late"}),
    ]
    env = LocalEnvironmentClient(Toy())
    task = {"responses_create_params": {"input": [{"role": "user", "content": "go"}]}}
    try:
        with ScriptedModelServer(tool_script(calls)) as server:
            model = OpenAIResponsesModel(server.url)
            try:
                result = await ToolCallingAgent(max_steps=10).run(task, env, model)
                asked = len(server.bodies("/v1/responses"))
            finally:
                await model.aclose()
    finally:
        await env.aclose()
    assert result.failure is None and result.verdict is not None
    assert result.verdict.reward == 1.0
    assert result.verdict.metrics == {"submitted": True, "edits": 2}
    assert result.response is not None and result.truncated is None
    outputs = [item["output"] for item in outputs_so_far({"input": result.response["output"]})]
    assert outputs[0] == "write hello.txt\n[exit status 0]"
    assert outputs[3] == "/work/out\nhello world\n[exit status 0]"
    assert outputs[5].startswith("Submitted: the episode is over")
    assert asked == 6 and len(outputs) == 6  # submit ended it: the model was not asked again
    assert len(env.sessions) == 0


async def test_check_runs_in_a_fresh_shell_that_the_agents_functions_cannot_fool(
    machine: Machine,
) -> None:
    await machine.run("echo real > /work/f.txt; cd /tmp; cat() { echo fake; }; sleep 300 &")
    await machine.run("cd /tmp; cat() { echo fake; }")
    checked = await machine.check("pwd; cat f.txt; exit 4")
    assert (checked.status, checked.head) == (4, "/work\nreal\n")
    late = await machine.check("sleep 30", timeout=1)
    assert late.timed_out and late.status is None


async def test_the_tools_schema_and_bad_arguments_are_told_to_the_model() -> None:
    env = LocalEnvironmentClient(Toy())
    try:
        names = [tool["name"] for tool in env.tools()]
        assert names == ["bash", "str_replace_editor", "submit"]
        session = await env.seed({"responses_create_params": {"input": []}})
        with pytest.raises(ToolCallRejected, match="the insert command needs insert_line"):
            await env.call_tool(
                session, "str_replace_editor", {"command": "insert", "path": "a", "new_str": "x"}
            )
        for timeout in (10_000, 0):  # the message says which bound (a 0 is not "between")
            told = f"more than 0 and at most .*, not {timeout}"
            with pytest.raises(ToolCallRejected, match=told):
                await env.call_tool(session, "bash", {"command": "true", "timeout": timeout})
        await env.close(session)
    finally:
        await env.aclose()


async def test_a_timeout_interrupts_even_when_palaestra_runs_with_sigint_ignored(
    machine: Machine,
) -> None:
    """A collector started in the background (nohup, ``&``) has SIGINT ignored, which its
    children inherit and bash cannot undo: the shell must still start commands with it."""
    import signal

    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        slow = await machine.run("echo start; sleep 60; echo never", timeout=1)
    finally:
        signal.signal(signal.SIGINT, before)
    assert slow.timed_out and slow.interrupted == "SIGINT" and slow.ended is None

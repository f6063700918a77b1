"""The sandbox's ordinary behaviour: files in and out, stdin, exit status, a clean env."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from palaestra.errors import ConfigError, SandboxLimitExceeded
from palaestra.sandbox import Limit, Limits, Sandbox, SandboxUnavailable
from palaestra.types import FailureKind


async def test_python_snippet_runs_in_the_work_dir_with_files_in_and_out(sandbox: Sandbox) -> None:
    code = (
        "import os, sys\n"
        "data = open('data/in.txt').read()\n"
        "open('out.txt', 'w').write(data.upper())\n"
        "os.makedirs('deep/er')\n"
        "open('deep/er/x.bin', 'wb').write(bytes([0, 255]))\n"
        "print(os.getcwd(), sys.stdin.read())\n"
        "print('warning', file=sys.stderr)\n"
    )
    result = await sandbox.run_python(
        code,
        files={"data/in.txt": "hello"},
        stdin="from stdin",
        collect=["out.txt", "deep/**/*.bin", "missing.txt"],
    )
    assert result.ok and result.exit_code == 0 and result.signal is None
    assert result.stdout == "/work from stdin\n"
    assert result.stderr == "warning\n"
    assert result.files == {"out.txt": b"HELLO", "deep/er/x.bin": b"\x00\xff"}
    assert result.isolation == "bubblewrap"
    assert result.failure_kind is None
    result.raise_for_limit()  # nothing to raise


async def test_commands_report_exit_status_and_signals(sandbox: Sandbox) -> None:
    failed = await sandbox.run(["/bin/sh", "-c", "echo no >&2; exit 3"])
    assert (failed.exit_code, failed.signal, failed.stderr) == (3, None, "no\n")
    assert not failed.ok and failed.limit is None
    killed = await sandbox.run_python("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
    assert killed.exit_code is None and killed.signal == 11


async def test_the_environment_is_clean_and_only_what_we_pass(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PALAESTRA_TEST_SECRET", "hunter2")
    result = await sandbox.run_python(
        "import os; print(sorted(os.environ)); print(os.environ['ANSWER'])", env={"ANSWER": "42"}
    )
    assert "PALAESTRA_TEST_SECRET" not in result.stdout and "hunter2" not in result.stdout
    assert result.stdout.endswith("42\n")


async def test_runs_are_isolated_from_each_other(sandbox: Sandbox) -> None:
    first, second = await asyncio.gather(
        sandbox.run_python("import os; open('mine', 'w').write('1'); print(os.getuid())"),
        sandbox.run_python("import os, time; time.sleep(0.2); print(os.listdir('.'), os.getuid())"),
    )
    assert first.ok and second.ok
    assert second.stdout.startswith("['main.py']")  # a fresh work dir each
    if os.geteuid() == 0:  # root drops every run to a uid of its own
        assert first.stdout.split()[-1] != second.stdout.split()[-1]


async def test_a_limit_becomes_a_sandbox_limit_failure(sandbox: Sandbox) -> None:
    result = await sandbox.run_python("x = bytearray(3 * 1024**3)")
    assert result.limit == Limit.MEMORY
    assert result.failure_kind == FailureKind.SANDBOX_LIMIT
    with pytest.raises(SandboxLimitExceeded) as raised:
        result.raise_for_limit()
    assert raised.value.kind == FailureKind.SANDBOX_LIMIT and raised.value.limit == "memory"


async def test_file_names_must_stay_inside_the_work_dir(sandbox: Sandbox) -> None:
    for name in ("../escape.txt", "/etc/passwd", "a/../../b"):
        with pytest.raises(ValueError, match="relative path"):
            await sandbox.run(["/usr/bin/true"], files={name: "x"})
    with pytest.raises(ValueError, match=r"main\.py"):
        await sandbox.run_python("print(1)", files={"main.py": "x"})


async def test_rlimits_fallback_warns_loudly_and_still_enforces_limits(runs_dir: Path) -> None:
    fallback = Sandbox(Limits(wall_time=1), isolation="rlimits", root_dir=runs_dir)
    with pytest.warns(RuntimeWarning, match="NOT a security boundary"):
        assert fallback.isolation == "rlimits"
    result = await fallback.run_python("import os; print(os.getcwd() != '/work')")
    assert result.ok and result.stdout == "True\n" and result.isolation == "rlimits"
    spinning = await fallback.run_python("while True: pass")
    assert spinning.limit == Limit.WALL_TIME


async def test_bubblewrap_can_be_required(monkeypatch: pytest.MonkeyPatch, runs_dir: Path) -> None:
    monkeypatch.setenv("PATH", str(runs_dir))  # no bwrap on PATH
    with pytest.raises(SandboxUnavailable, match="bwrap is not installed"):
        await Sandbox(isolation="bubblewrap", root_dir=runs_dir).run(["/usr/bin/true"])
    with pytest.warns(RuntimeWarning, match="bwrap is not installed"):
        assert Sandbox(root_dir=runs_dir).isolation == "rlimits"


async def test_a_root_dir_the_sandbox_uid_cannot_enter_is_refused(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "runs").mkdir()
    unreachable = Sandbox(root_dir=private / "runs")
    if unreachable._uids is None:
        pytest.skip("only root drops to a sandbox uid")
    with pytest.raises(ConfigError, match="not o\\+x"):
        await unreachable.run(["/usr/bin/true"])


async def test_a_cancelled_run_leaves_nothing_behind(sandbox: Sandbox, runs_dir: Path) -> None:
    task = asyncio.create_task(sandbox.run(["/bin/sh", "-c", "sleep 100 & sleep 100"]))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert list(runs_dir.iterdir()) == []  # and the leak check finds no process

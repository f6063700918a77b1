"""Running a package's own tests over a (mutated) copy of it, and judging a mutation by them.

The tests run in the machine the tasks ship, not on the generating host: a root filesystem
with exactly the Dockerfile's packages (``mmdebstrap --variant=minbase --include=...``; Debian's
recommends such as numpy are absent there, so a test that would skip in the task also skips
here), entered with bubblewrap, the working copy bound at ``/testbed``, no network. Without a
root filesystem the host's ``/usr/bin/python3`` runs them (faithful only on a host with the same
packages and no recommends).

A worker owns a working copy of the package (``<work>/<pkg>``, copied once with its bytecode);
a mutation is written into it, the test file run, and the original copied back (its mtime
with it, so the cached bytecode stays valid).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

SITE = "/usr/lib/python3/dist-packages"
TESTBED = "/testbed"
PROBE = Path(__file__).with_name("probe.py")


@dataclass(frozen=True)
class RunResult:
    """What one pytest run of some tests reported (see ``probe.py``)."""

    outcomes: dict[str, str]
    messages: dict[str, str] = field(default_factory=dict)
    collect_errors: list[str] = field(default_factory=list)
    covered: dict[str, list[str]] = field(default_factory=dict)
    at_import: list[str] = field(default_factory=list)
    lines: dict[str, list[int]] = field(default_factory=dict)
    """Per file of the package, the lines some passing test executed (a probe's run only)."""

    def passed(self) -> list[str]:
        return [node for node, outcome in self.outcomes.items() if outcome == "passed"]


@dataclass(frozen=True)
class Verdict:
    """A kept mutation: the tests it breaks and the tests of the same file it leaves passing."""

    fail_to_pass: list[str]
    pass_to_pass: list[str]


def judge(baseline: RunResult, mutated: RunResult | None, *, max_fail: int = 10) -> Verdict | str:
    """The verdict on a mutation, or why it is rejected.

    Kept: the file still collects, 1..``max_fail`` of the tests that passed on the original fail
    (or error) on the mutation, and at least one still passes; tests that did not pass on the
    original take no part. A mutation that times out, breaks nothing, or breaks the whole file
    is rejected.
    """
    if mutated is None:
        return "timed out"
    if mutated.collect_errors:
        return "the test file no longer collects"
    before = baseline.passed()
    failing = [node for node in before if mutated.outcomes.get(node) in ("failed", "error")]
    passing = [node for node in before if mutated.outcomes.get(node) == "passed"]
    if not failing:
        return "no test fails"
    if not passing:
        return "every test of the file fails"
    if len(failing) > max_fail:
        return f"{len(failing)} tests fail (more than {max_fail})"
    return Verdict(fail_to_pass=failing, pass_to_pass=passing)


def bounded(
    command: list[str],
    env: Mapping[str, str],
    timeout: float,
    *,
    cwd: Path | None = None,
    output: IO[bytes] | None = None,
) -> bool:
    """Run ``command`` in a session of its own (its output to ``output``, or nowhere);
    whether it ended within ``timeout`` seconds (if not, the whole session is killed)."""
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=dict(env),
        stdout=output if output is not None else subprocess.DEVNULL,
        stderr=subprocess.STDOUT if output is not None else subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return False
    return True


class Runner:
    """Runs tests of a working copy at ``work`` (seen as ``/testbed``), in ``rootfs`` when given."""

    def __init__(self, work: Path, rootfs: Path | None, *, site: Path | None = None) -> None:
        self.work = work
        self.rootfs = rootfs
        default = (rootfs / SITE.lstrip("/")) if rootfs is not None else Path(SITE)
        self.site = site if site is not None else default
        """Where the pristine packages are (the machine's site-packages)."""

    def prepare(self, package: str) -> None:
        """Copy ``package`` from the machine's site-packages into the working copy, once; a
        copy left by an interrupted run gets back every source file that differs."""
        target = self.work / package
        if not target.exists():
            self.work.mkdir(parents=True, exist_ok=True)
            shutil.copytree(self.site / package, target, symlinks=True)
            return
        for source in (self.site / package).rglob("*.py"):
            copy = target / source.relative_to(self.site / package)
            mine = copy.stat() if copy.exists() else None
            theirs = source.stat()
            if mine is None or (mine.st_size, mine.st_mtime) != (theirs.st_size, theirs.st_mtime):
                shutil.copy2(source, copy)

    def original(self, relative: str) -> Path:
        """The pristine file of ``relative`` (``pkg/sub/mod.py``)."""
        return self.site / relative

    def write(self, relative: str, text: str) -> None:
        (self.work / relative).write_text(text, encoding="utf-8")

    def restore(self, relative: str) -> None:
        shutil.copy2(self.original(relative), self.work / relative)

    def run(
        self, targets: list[str], *, cover: str | None = None, timeout: float = 60.0
    ) -> RunResult | None:
        """Run pytest on ``targets`` (paths or node ids relative to the working copy); None
        when it exceeds ``timeout`` seconds or dies without a report."""
        with tempfile.TemporaryDirectory(prefix="swe-probe-") as out_dir:
            out = Path(out_dir)
            extra = {"SWE_PROBE_OUT": f"{self.inside(out)}/result.json"}
            if cover is not None:
                extra["SWE_PROBE_COVER"] = f"{self.inside(None)}/{cover}"
            pytest = [
                "/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                "-p", "_swe_probe", f"--rootdir={self.inside(None)}", "--tb=long", *targets,
            ]  # fmt: skip
            command, env = self.boxed(pytest, out, extra)
            if not bounded(command, env, timeout, cwd=self.work):
                return None
            result = out / "result.json"
            if not result.is_file():
                return None
            return read_result(result)

    def inside(self, out: Path | None) -> str:
        """Where the machine sees ``out`` (``None``: the working copy)."""
        if self.rootfs is None:
            return str(out if out is not None else self.work)
        return "/out" if out is not None else TESTBED

    def boxed(
        self, command: list[str], out: Path, extra: Mapping[str, str]
    ) -> tuple[list[str], dict[str, str]]:
        """``command`` as run in the machine (bubblewrap, no network, the working copy at
        ``/testbed``, ``out`` at ``/out`` with the probe in it) and its environment."""
        shutil.copy(PROBE, out / "_swe_probe.py")
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": "/tmp",
            "LANG": "C.UTF-8",
            "PYTHONPATH": f"{self.inside(None)}:{self.inside(out)}",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
            **extra,
        }
        if self.rootfs is None:
            return command, env
        for mount_point in (TESTBED, "/out"):
            (self.rootfs / mount_point.lstrip("/")).mkdir(exist_ok=True)
        return [
            "bwrap", "--ro-bind", str(self.rootfs), "/", "--bind", str(self.work),
            TESTBED, "--bind", str(out), "/out", "--proc", "/proc", "--dev", "/dev",
            "--tmpfs", "/tmp", "--unshare-all", "--die-with-parent", "--chdir", TESTBED,
            *command,
        ], env  # fmt: skip


def read_result(path: Path) -> RunResult:
    """The probe's report at ``path``."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return RunResult(
        outcomes=data["outcomes"],
        messages=data["messages"],
        collect_errors=data["collect_errors"],
        covered=data["covered"],
        at_import=data["at_import"],
        lines=data.get("lines", {}),
    )

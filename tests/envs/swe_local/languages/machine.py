"""A Go or Rust task's machine made on this host, for tests: ``/testbed`` built as the task's
Dockerfile builds it (the repository's Debian package must be installed here), and the task's
``tests/test.sh`` run in bubblewrap as root, as the harbor runner runs it after the agent."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from palaestra.envs.swe_local.folders import write_instance
from palaestra.envs.swe_local.languages import go, rust
from palaestra.envs.swe_local.languages.boxes import repo_of
from palaestra.envs.swe_local.languages.common import copy_base

GIT_CONFIG = (
    "[user]\n\tname = palaestra\n\temail = palaestra@localhost\n"
    "[gc]\n\tauto = 0\n[core]\n\tcheckStat = minimal\n\ttrustctime = false\n"
)


class Machine:
    """One task's machine under ``root``: ``testbed``, ``task`` (its folder), ``logs``."""

    def __init__(self, line: Mapping[str, Any], root: Path) -> None:
        self.line = line
        self.root = root
        self.task = write_instance(line, root / "task")
        self.testbed = root / "testbed"
        self.logs = root / "logs"
        self.gitconfig = root / "gitconfig"
        self.gitconfig.write_text(GIT_CONFIG)
        repo = repo_of(line)
        copy_base(Path(repo.source), self.testbed)
        tool = go.Go() if line["language"] == "go" else rust.Rust()
        tool.prepare(repo, self.testbed)
        bug = self.task / "environment" / "bug.patch"
        files = " ".join(line["files"])
        self.sh(
            f"git init -q && git add -A && patch -s -p1 < {bug} && git add -- {files}"
            " && git commit -qm base && git prune --expire=now"
        )

    def sh(self, script: str) -> str:
        """Run ``script`` in ``/testbed`` on the host, as the agent would in the machine."""
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=self.testbed,
            env={
                "PATH": "/usr/bin:/bin",
                "HOME": str(self.root),
                "GIT_CONFIG_GLOBAL": str(self.gitconfig),
            },
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def solve(self) -> None:
        """The oracle's ``solution/solve.sh`` (it ``cd``s to /testbed: run on the copy)."""
        script = (
            (self.task / "solution" / "solve.sh").read_text().replace("/testbed", str(self.testbed))
        )
        self.sh(script)

    def verify(self) -> tuple[str | None, str]:
        """Run ``tests/test.sh`` as root in bubblewrap: (the reward file's text, the output)."""
        if self.logs.exists():
            shutil.rmtree(self.logs)
        self.logs.mkdir()
        links = [
            arg
            for name in ("bin", "sbin", "lib", "lib64")
            for arg in ("--symlink", f"usr/{name}", f"/{name}")
            if Path(f"/{name}").is_symlink()
        ]
        command = [
            "bwrap", "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc", *links,
            "--bind", str(self.testbed), "/testbed", "--ro-bind", str(self.task / "tests"),
            "/tests", "--bind", str(self.logs), "/logs", "--tmpfs", "/tmp", "--proc", "/proc",
            "--dev", "/dev", "--unshare-net", "--unshare-pid", "--unshare-ipc",
            "--die-with-parent", "--chdir", "/", "bash", "/tests/test.sh",
        ]  # fmt: skip
        done = subprocess.run(
            command, env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr
        reward = self.logs / "verifier" / "reward.txt"
        return (reward.read_text().strip() if reward.exists() else None), done.stdout

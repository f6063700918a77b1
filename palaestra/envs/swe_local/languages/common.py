"""What the Go and Rust generators share: the repository table, the sandboxed test run, the
base tree's id, the judge, and the manifest lines.

A repository is a Debian package's source, copied as the task's machine copies it into
``/testbed`` (``base``); a mutation is written into a working copy of it, the tests run in
bubblewrap (the host's root read-only, the copy bound at ``/testbed``, a cache directory at
``/cache``, no network), and the original written back. The generating host must be the
machine's release (Debian bookworm) with the repository's package installed.
"""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from palaestra.envs.swe_local.validate import RunResult, Verdict, bounded, judge

TESTBED = "/testbed"
CACHE = "/cache"


@dataclass(frozen=True)
class Repo:
    """One repository: a Debian package's source and where the package installs it."""

    name: str
    """The short name (``go-cmp``, ``semver``): the manifest's ``repo``."""
    deb: str
    upstream: str
    license: str
    source: str
    """Where the package installs the source (a directory)."""
    module: str = ""
    """Go: the module's import path; Rust: the crate's name."""
    whole: bool = False
    """Go: every mutation is tested by the whole module's tests (its tests are a package of
    their own), not only by its own package's."""
    extras: tuple[str, ...] = ()
    """Debian packages the machine installs beside ``deb``: Rust, the crates its
    ``Cargo.lock`` names that ``deb`` does not depend on (optional and dev-dependencies)."""


@dataclass
class Run:
    """What one test run reported: each test's outcome and output, or why it has none."""

    outcomes: dict[str, str] = field(default_factory=dict)
    output: dict[str, str] = field(default_factory=dict)
    broken: str = ""
    """Non-empty when the code did not build (a mutation that does not compile)."""
    seconds: float = 0.0

    def passed(self) -> list[str]:
        return [test for test, outcome in self.outcomes.items() if outcome == "passed"]

    def result(self) -> RunResult:
        """As ``validate`` reads a run (a build failure counts as a file that no longer
        collects)."""
        return RunResult(
            outcomes=dict(self.outcomes), collect_errors=[self.broken] if self.broken else []
        )


def decide(baseline: Run, mutated: Run | None, *, max_fail: int = 10) -> Verdict | str:
    """``validate.judge`` over these runs: kept when 1..``max_fail`` tests that passed now
    fail and the rest pass; a mutation that does not build, hangs or breaks all is rejected."""
    if mutated is not None and mutated.broken:
        return f"does not build: {mutated.broken}"
    return judge(
        baseline.result(), None if mutated is None else mutated.result(), max_fail=max_fail
    )


def sandboxed(
    command: list[str],
    work: Path,
    cache: Path,
    env: Mapping[str, str],
    timeout: float,
) -> tuple[str, float] | None:
    """Run ``command`` in bubblewrap (the host's ``/usr`` and ``/etc`` read-only, ``work``
    at ``/testbed``, ``cache`` at ``/cache``, no network), stdout and stderr together; None
    on a timeout."""
    cache.mkdir(parents=True, exist_ok=True)
    wrapped = [
        "bwrap", "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc",
        *[arg for link in ("bin", "sbin", "lib", "lib64") for arg in _usr_link(link)],
        "--bind", str(work), TESTBED, "--bind", str(cache), CACHE, "--proc", "/proc",
        "--dev", "/dev", "--tmpfs", "/tmp", "--unshare-all", "--die-with-parent",
        "--chdir", TESTBED, *command,
    ]  # fmt: skip
    started = time.monotonic()
    with tempfile.TemporaryFile() as out:
        if not bounded(wrapped, env, timeout, output=out):
            return None
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return text, time.monotonic() - started


def _usr_link(name: str) -> list[str]:
    """bwrap's arguments for the host's ``/<name>`` (a merged-usr symlink, or a directory)."""
    path = Path("/") / name
    if path.is_symlink():
        return ["--symlink", os.readlink(path), f"/{name}"]
    return ["--ro-bind", str(path), f"/{name}"] if path.is_dir() else []


def copy_base(source: Path, target: Path) -> None:
    """A copy of ``source`` at ``target`` (symlinks followed, modes kept), as the machine's
    ``cp -rL`` makes it; an existing copy is replaced."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, symlinks=False)


def tree_id(work: Path, changed: Mapping[str, bytes] | None = None) -> str:
    """The id of the tree ``git add -A`` gives for ``work`` (with ``changed`` files' content
    in place of theirs): the base commit's tree the verifier puts ``/testbed`` back to."""
    with tempfile.TemporaryDirectory(prefix="swe-tree-") as scratch:
        copy = Path(scratch) / "w"
        shutil.copytree(work, copy, symlinks=True)
        for relative, data in (changed or {}).items():
            (copy / relative).write_bytes(data)
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": scratch,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_DIR": f"{scratch}/git",
            "GIT_WORK_TREE": str(copy),
        }
        subprocess.run(["git", "init", "-q"], env=env, check=True, cwd=copy)
        subprocess.run(["git", "add", "-A"], env=env, check=True, cwd=copy)
        done = subprocess.run(
            ["git", "write-tree"], env=env, check=True, cwd=copy, capture_output=True, text=True
        )
    return done.stdout.strip()


def unified(relative: str, before: bytes, after: bytes) -> str:
    """A unified diff (``patch -p1`` from the repository's root) from ``before`` to ``after``."""
    return "".join(
        difflib.unified_diff(
            before.decode().splitlines(keepends=True),
            after.decode().splitlines(keepends=True),
            f"a/{relative}",
            f"b/{relative}",
        )
    )


def debian_version(deb: str) -> str:
    """The installed version of the Debian package ``deb``."""
    done = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Version}", deb], capture_output=True, text=True
    )
    if done.returncode != 0 or not done.stdout:
        raise SystemExit(f"{deb} is not installed: apt-get install {deb}")
    return done.stdout


def level(lines: int) -> str:
    """A proxy for how hard the bug is to find: the length of the function it is in."""
    return "easy" if lines <= 15 else "medium" if lines <= 50 else "hard"


def changed_lines(patch: str) -> int:
    """Lines the patch removes or adds."""
    return sum(
        1 for line in patch.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))
    )


def leaks_fix(statement: str, bug: str) -> bool:
    """Whether the statement quotes a line the fix changes (the gold patch's text given away)."""
    changed = [
        line[1:].strip()
        for line in bug.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    return any(len(text) >= 8 and text in statement for text in changed)

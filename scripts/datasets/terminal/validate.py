"""Check task folders in real machines: the oracle must score 1, an untouched machine 0.

::

    python -m scripts.datasets.terminal.validate palaestra/envs/terminal/tasks.tar.xz
    python -m scripts.datasets.terminal.validate --stand-in palaestra-test:base TASKS

Each task's ``environment/`` is built with ``docker build --network none`` and run with no
network, twice: once untouched (the null run) and once after ``solution/solve.sh`` ran as the
task's agent user (the oracle run); each time ``tests/`` is copied in only then and
``test.sh`` runs as root, as Harbor does. ``--stand-in IMAGE`` replaces ``FROM
debian:bookworm-slim`` by IMAGE and drops the ``apt-get install`` line, for a machine whose
offline Debian base with its package archive is not built yet (tasks needing a package that
image lacks then fail their oracle, which is reported, not hidden).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from palaestra.environment.kinds.harbor.tasks import unpacked
from palaestra.wire.harbor import DOCKERFILE, REWARD_JSON, REWARD_TXT, read_task, read_tasks

BASE = "FROM debian:bookworm-slim"


@dataclass(frozen=True)
class Verdict:
    task: str
    null: float | None
    oracle: float | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.null == 0.0 and self.oracle == 1.0


def _docker(*args: str, timeout: float = 600.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)


def _build(folder: Path, tag: str, stand_in: str | None) -> str | None:
    """Build the task's image as ``tag``; an error line, or None.

    The Dockerfile's head (``FROM`` and the family's ``apt-get`` line, the same for every task
    of a family) is first built and tagged ``palaestra-terminal-check-base:<hash>``: the task's
    build reuses it from the cache, and removing the task's image afterwards keeps it (the
    family's packages are installed once per machine, and nothing else is left behind)."""
    text = (folder / DOCKERFILE).read_text(encoding="utf-8")
    if stand_in is not None:
        lines = [
            f"FROM {stand_in}" if line.strip() == BASE else line
            for line in text.splitlines()
            if not line.startswith("RUN apt-get update")
        ]
        text = "\n".join(lines) + "\n"
    lines = text.splitlines()
    cut = next((i for i, line in enumerate(lines) if line.startswith("RUN apt-get update")), None)
    if cut is not None:
        head = "\n".join(line for line in lines[: cut + 1] if not line.startswith("#")) + "\n"
        base = "palaestra-terminal-check-base:" + hashlib.sha256(head.encode()).hexdigest()[:16]
        error = _docker_build(head, base, folder / "environment")
        if error is not None:
            return error
    return _docker_build(text, tag, folder / "environment")


def _docker_build(dockerfile: str, tag: str, context: Path) -> str | None:
    with tempfile.NamedTemporaryFile("w", suffix=".Dockerfile", delete=False) as file:
        file.write(dockerfile)
    try:
        done = _docker(
            "build",
            "-q",
            "--force-rm",
            "--network",
            "none",
            "-f",
            file.name,
            "-t",
            tag,
            str(context),
        )
    finally:
        Path(file.name).unlink()
    if done.returncode != 0:
        return f"build failed: {done.stderr.strip().splitlines()[-1:]}"
    return None


def _episode(folder: Path, tag: str, user: str, oracle: bool) -> tuple[float | None, str | None]:
    """One run of the image; the reward and an error line."""
    started = _docker(
        "run", "-d", "--network", "none", "--user", "root", "--entrypoint", "sleep", tag, "infinity"
    )
    if started.returncode != 0:
        return None, f"start failed: {started.stderr.strip()}"
    container = started.stdout.strip()
    try:
        if oracle:
            _docker("cp", str(folder / "solution"), f"{container}:/solution")
            solved = _docker("exec", "-u", user, container, "bash", "/solution/solve.sh")
            if solved.returncode != 0:
                return None, f"solve.sh exited {solved.returncode}: {solved.stderr.strip()[-300:]}"
        _docker("cp", str(folder / "tests"), f"{container}:/tests")
        tested = _docker("exec", "-u", "root", container, "bash", "/tests/test.sh")
        if tested.returncode != 0:
            return None, f"test.sh exited {tested.returncode}: {tested.stderr.strip()[-300:]}"
        as_json = _docker("exec", container, "cat", REWARD_JSON)
        if as_json.returncode == 0:
            return float(json.loads(as_json.stdout)["reward"]), None
        as_text = _docker("exec", container, "cat", REWARD_TXT)
        if as_text.returncode == 0:
            return float(as_text.stdout.strip()), None
        return None, "test.sh wrote no reward"
    finally:
        _docker("rm", "-f", container)


def validate(folder: str | Path, stand_in: str | None = None) -> Verdict:
    """Build ``folder``'s machine, run the null and oracle episodes; the verdict."""
    task = read_task(folder)
    path = task.path
    tag = f"palaestra-terminal-check:{task.digest.removeprefix('sha256:')[:16]}"
    user = str(task.config.agent.user or "root")
    error = _build(path, tag, stand_in)
    if error is not None:
        return Verdict(path.name, None, None, error)
    try:
        null, null_error = _episode(path, tag, user, oracle=False)
        oracle, oracle_error = _episode(path, tag, user, oracle=True)
    finally:
        _docker("rmi", tag)
    error = oracle_error or null_error
    return Verdict(path.name, null, oracle, error)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.datasets.terminal.validate")
    parser.add_argument("tasks", nargs="+", help="task folders, folders or archives of them")
    parser.add_argument("--stand-in", metavar="IMAGE", help="build FROM this image instead")
    args = parser.parse_args(argv)
    failed = 0
    for root in args.tasks:
        for task in read_tasks(unpacked(Path(root))):
            verdict = validate(task.path, args.stand_in)
            failed += not verdict.ok
            status = "ok" if verdict.ok else "FAIL"
            print(
                f"{status} {verdict.task} null={verdict.null} oracle={verdict.oracle}"
                + (f" ({verdict.error})" if verdict.error else ""),
                flush=True,
            )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

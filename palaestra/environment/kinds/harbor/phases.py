"""What runs around the agent's phase of a Harbor task: health checks before it, collect hooks
after it, and the files taken out of its machine (artifacts and ``/logs/agent``); and the
longest each may take (``verify_budget``, ``health_budget``: the environment's timeouts).

- **Health check** (``[environment.healthcheck]``, a step's ``healthcheck``): the command runs
  in the fresh machine, as Docker's HEALTHCHECK does, until it passes; a machine that never
  passes is the task's machine not starting, a ``SandboxFailure`` (never the agent's score).
- **Collect hooks** (``[[verifier.collect]]``): after the agent's phase (its processes gone,
  the box sealed), each command runs in the agent's machine to snapshot state into files; one
  that fails or overruns is recorded on the row and the tests run all the same (Harbor's
  rule: a hook is best effort, the tests say what the files are worth).
- **Files taken out** (``take_files``): ``/logs/artifacts`` (Harbor's convention directory),
  the task's and the step's ``artifacts``, and ``/logs/agent``, read by ``tar`` in the box as
  root (every link resolves inside the box) and unpacked on the host with the ``data``
  filter (no device, no link leaving the tree, no set-id bit): the agent chose what is in
  them, so they are untrusted bytes. They are stored by content under the Harbor cache and
  listed on the row (path, size, sha256, and the text of a small text file); a separate
  verifier machine gets them back at the same paths (``put_files``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import os
import shlex
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from palaestra.environment.kinds.harbor.boxes import BoxRefused, run
from palaestra.errors import SandboxFailure
from palaestra.sandbox import Limits
from palaestra.sandbox.limits import Limit
from palaestra.sandbox.machines.provider import Box
from palaestra.sandbox.process import supervised
from palaestra.types import JsonDict
from palaestra.wire.harbor import (
    ARTIFACTS_DIR,
    Artifact,
    ArtifactConfig,
    CollectConfig,
    HealthcheckConfig,
    TaskConfig,
)

FILES_CAP = 64 << 20
"""Bytes of the archive of files taken out of a machine (artifacts and agent logs)."""
TEXT_CAP = 16 << 10
"""A file this small that is UTF-8 text is written into the row itself."""
TAKE_TIMEOUT = 120.0


async def health_check(box: Box, check: HealthcheckConfig, *, user: str | None) -> None:
    """Run ``check`` in ``box`` until it passes: failures in its start period do not count,
    ``retries`` failures in a row after it are a ``SandboxFailure`` naming the command."""
    loop = asyncio.get_running_loop()
    grace_until = loop.time() + check.start_period_sec
    failures = 0
    last = ""
    while True:
        ran = await run(box, check.command, timeout=check.timeout_sec, user=user)
        if ran.status == 0:
            return
        last = "it timed out" if ran.status is None else f"exit status {ran.status}"
        in_grace = loop.time() < grace_until
        if not in_grace:
            failures += 1
            if failures >= check.retries:
                raise SandboxFailure(
                    f"the machine is not healthy: healthcheck {check.command!r} failed "
                    f"{failures} times in a row ({last})"
                )
        await asyncio.sleep(check.start_interval_sec if in_grace else check.interval_sec)


async def run_collect(box: Box, hooks: Sequence[CollectConfig], *, user: str) -> list[JsonDict]:
    """Run each collect hook in the agent's (sealed) ``box``; what each did, for the row
    (only hooks that failed or overran are listed)."""
    problems: list[JsonDict] = []
    for hook in hooks:
        hook_user = str(hook.user) if hook.user is not None else user
        try:
            ran = await run(box, hook.command, timeout=hook.timeout_sec, user=hook_user)
        except BoxRefused as refused:
            problems.append({"command": hook.command, "problem": str(refused)})
            continue
        if ran.status != 0:
            why = "it ran past timeout_sec" if ran.status is None else f"exit status {ran.status}"
            problems.append({"command": hook.command, "problem": why})
    return problems


def sources(*groups: Iterable[Artifact]) -> list[str]:
    """The absolute paths to take out of a machine: the convention directory, then every
    artifact entry's source (duplicates and paths inside an earlier one dropped)."""
    paths = [ARTIFACTS_DIR]
    for group in groups:
        for entry in group:
            paths.append(entry.source if isinstance(entry, ArtifactConfig) else entry)
    kept: list[str] = []
    for path in paths:
        pure = PurePosixPath(path.rstrip("/") or "/")
        if not any(pure == PurePosixPath(k) or PurePosixPath(k) in pure.parents for k in kept):
            kept.append(str(pure))
    return kept


@dataclass(frozen=True, slots=True)
class TakenFiles:
    """Files taken out of a machine: a host directory mirroring their paths from ``/``."""

    directory: Path
    files: list[JsonDict]
    """Per regular file: ``path`` (in the machine), ``bytes``, ``sha256``, and ``text`` when
    it is small UTF-8 text."""

    def row(self) -> JsonDict:
        return {"dir": str(self.directory), "files": self.files}


async def take_files(box: Box, paths: Sequence[str], store: Path) -> TakenFiles:
    """The files at ``paths`` in ``box`` (missing ones skipped), stored by content under
    ``store``. ``BoxRefused`` when they cannot be read (more than ``FILES_CAP`` bytes, or
    ``tar`` failing): the box is the agent's."""
    relative = [path.lstrip("/") for path in paths if path.strip("/")]
    listed = " ".join(shlex.quote(path) for path in relative)
    command = (
        f"cd / && set -- && for p in {listed}; do "
        '{ [ -e "$p" ] || [ -L "$p" ]; } && set -- "$@" "$p"; done; '
        '[ "$#" -eq 0 ] || exec tar -c --numeric-owner -- "$@"'
    )
    process = await box.launch(
        ["/bin/bash", "--noprofile", "--norc", "-c", command],
        stdin=subprocess.DEVNULL,
        user="root",
        cwd="/",
    )
    outcome = await supervised(process, Limits(wall_time=TAKE_TIMEOUT, output_bytes=FILES_CAP))
    if outcome.limit is Limit.OUTPUT:
        raise BoxRefused(f"the files to keep ({', '.join(paths)}) exceed {FILES_CAP >> 20} MB")
    if outcome.limit is not None or outcome.status not in (0, 1):
        why = outcome.stderr.decode(errors="replace").strip().splitlines()
        raise BoxRefused(f"cannot read {', '.join(paths)}: {why[-1] if why else outcome.status}")
    data = outcome.stdout
    digest = hashlib.sha256(data).hexdigest()
    target = store / digest[:24]
    if not target.is_dir():
        store.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=f".{digest[:24]}.", dir=store))
        try:
            if data:
                with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
                    tar.extractall(partial, filter="data")
            os.replace(partial, target)
        except OSError:
            if not target.is_dir():
                raise
        except tarfile.TarError as error:
            raise BoxRefused(f"the files to keep are not a readable archive: {error}") from None
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    return TakenFiles(target, _listing(target))


def _listing(root: Path) -> list[JsonDict]:
    files: list[JsonDict] = []
    for path in sorted(root.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        content = path.read_bytes()
        entry: JsonDict = {
            "path": "/" + path.relative_to(root).as_posix(),
            "bytes": len(content),
            "sha256": hashlib.sha256(content).hexdigest(),
        }
        if len(content) <= TEXT_CAP:
            with contextlib.suppress(UnicodeDecodeError):
                entry["text"] = content.decode("utf-8")
        files.append(entry)
    return files


async def put_files(box: Box, taken: TakenFiles, only: str | None = None) -> None:
    """Put the files of ``taken`` (or only those under the machine path ``only``) into
    ``box`` at the paths they had (as root, over what is there); ``BoxRefused`` when the box
    will not take them."""
    if only is not None:
        below = taken.directory / only.strip("/")
        children = [below] if below.is_dir() and not below.is_symlink() else []
    else:
        children = sorted(taken.directory.iterdir())
    if not children:
        return
    with tempfile.TemporaryFile() as archive:
        with tarfile.open(fileobj=archive, mode="w") as tar:
            for child in children:
                tar.add(child, arcname=child.relative_to(taken.directory).as_posix())
        archive.flush()
        archive.seek(0)
        ran = await run(
            box,
            "exec tar -x --no-same-owner -C /",
            timeout=TAKE_TIMEOUT,
            user="root",
            cwd="/",
            stdin=archive.fileno(),
        )
    if ran.status != 0:
        tail = ran.output.decode(errors="replace").strip()[-300:]
        raise BoxRefused(f"cannot put the agent's files into the verifier's machine: {tail}")


def verify_budget(config: TaskConfig) -> float:
    """The longest a task's tests and collect hooks may take, over its steps."""
    verifiers = [config.verifier, *(step.verifier for step in config.steps or [])]
    hooks = sum(hook.timeout_sec for hook in config.verifier.collect)
    return max(v.timeout_sec + hooks + sum(h.timeout_sec for h in v.collect) for v in verifiers)


def any_separate(config: TaskConfig) -> bool:
    """Whether some verify pass of the task runs in a machine of its own."""
    return any(config.separate_verifier(step) for step in [None, *(config.steps or [])])


def health_budget(configs: list[TaskConfig]) -> float:
    """The longest the health checks of a machine's start may take (every retry), over the
    tasks and their steps."""

    def most(check: HealthcheckConfig | None) -> float:
        if check is None:
            return 0.0
        grace = check.start_period_sec * (1 + check.timeout_sec / check.start_interval_sec)
        return grace + check.retries * (check.timeout_sec + check.interval_sec)

    return max(
        most(c.environment.healthcheck) + max([most(s.healthcheck) for s in c.steps or []] or [0.0])
        for c in configs
    )

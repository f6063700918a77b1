"""Files into and out of a box, by commands run in the box (any provider).

``box.root`` shows the box's files to the host, but the box's files are written by untrusted
code: a symbolic link the agent planted (``ln -s /etc /tests``) points into the *host's*
file system when the host follows it. So the host never writes below ``box.root`` by path:
``copy_in`` streams a tar to ``tar -x`` running in the box, and ``read_file`` runs ``cat``
in the box, where every link resolves inside the box. Both need ``tar``/``cat`` and ``sh`` in
the image (every Debian image has them).
"""

from __future__ import annotations

import subprocess
import tarfile
import tempfile
from pathlib import Path

from palaestra.errors import SandboxFailure
from palaestra.sandbox.limits import Limits
from palaestra.sandbox.machines.provider import Box
from palaestra.sandbox.process import supervise

_EXTRACT = 'mkdir -p -- "$1" && exec tar -x --no-same-owner -C "$1"'


async def copy_in(
    box: Box, source: Path, target: str, *, user: str = "root", timeout: float = 120.0
) -> None:
    """Copy the folder ``source`` (its contents) or the file ``source`` into the box's
    directory ``target``, as ``user`` (the files belong to them)."""
    with tempfile.TemporaryFile() as archive:
        with tarfile.open(fileobj=archive, mode="w") as tar:
            if source.is_dir():
                for child in sorted(source.iterdir()):
                    tar.add(child, arcname=child.name)
            else:
                tar.add(source, arcname=source.name)
        archive.seek(0)
        process = await box.launch(
            ["/bin/sh", "-c", _EXTRACT, "sh", target], stdin=archive.fileno(), user=user, cwd="/"
        )
        try:
            outcome = await supervise(process, Limits(wall_time=timeout, output_bytes=1 << 16))
        finally:
            process.close()
    if outcome.status != 0 or outcome.limit is not None:
        why = outcome.stderr.decode(errors="replace").strip() or f"exit status {outcome.status}"
        raise SandboxFailure(f"cannot copy {source} into the box at {target}: {why}")


async def read_file(
    box: Box, path: str, *, max_bytes: int = 1 << 20, timeout: float = 60.0
) -> bytes | None:
    """The first ``max_bytes`` of the box's file ``path`` (read as root in the box), or
    ``None`` when it cannot be read (missing, a directory)."""
    process = await box.launch(
        ["/bin/sh", "-c", 'exec head -c "$1" -- "$2"', "sh", str(max_bytes), path],
        stdin=subprocess.DEVNULL,
        user="root",
        cwd="/",
    )
    try:
        outcome = await supervise(process, Limits(wall_time=timeout, output_bytes=max_bytes))
    finally:
        process.close()
    if outcome.status != 0 or outcome.limit is not None:
        return None
    return outcome.stdout

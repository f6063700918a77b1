"""The image's ``TOOLCHAIN`` put back in a box's copy-on-write layer (``Box.seal``).

A box's filesystem is a kernel overlay: the image's layers below, the box's own upper
directory on top, where every change the agent made lands (a new or changed file, a
*whiteout* character device for a deleted one, an *opaque* directory for one deleted and
made again). Removing an entry from the upper directory shows the image's version again.
So for each ``TOOLCHAIN`` path, ``restore`` removes the agent's entry there, and on the way
down removes what hides the image's directory above it (a file, a symbolic link or a whiteout
standing in for it) and clears an opaque mark on it. Nothing is followed: the agent's
symbolic links are removed as links.

Only on an upper directory no overlay mounted at that moment has: the kernel does not
support changes to a mounted overlay's layers (its caches would show the old entries).
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path

from palaestra.errors import SandboxFailure
from palaestra.sandbox.machines.provider import TOOLCHAIN

OPAQUE_XATTRS = ("trusted.overlay.opaque", "user.overlay.opaque")
"""Where the kernel marks an opaque directory (``user.`` with ``userxattr``)."""


def restore(upper: Path, entries: Iterable[str] = TOOLCHAIN) -> list[str]:
    """Remove the agent's changes at ``entries`` (paths relative to the box's root) from the
    unmounted upper directory ``upper``; the entries removed (what the agent had changed).
    ``SandboxFailure`` if one cannot be removed."""
    removed: list[str] = []
    for entry in entries:
        parts = [part for part in entry.split("/") if part]
        directory = upper
        for index, part in enumerate(parts):
            path = directory / part
            try:
                info = os.lstat(path)
            except FileNotFoundError:
                break  # the agent changed nothing here: the image's entry shows
            except OSError as error:
                raise SandboxFailure(f"cannot read {path} to seal the box: {error}") from None
            last = index == len(parts) - 1
            if last or not stat.S_ISDIR(info.st_mode):
                _remove(path, info)
                removed.append("/".join(parts[: index + 1]))
                break
            if _clear_opaque(path):
                removed.append("/".join(parts[: index + 1]) + " (opaque)")
            directory = path
    return removed


def _remove(path: Path, info: os.stat_result) -> None:
    try:
        if stat.S_ISDIR(info.st_mode):
            shutil.rmtree(path)  # by file descriptors: a symbolic link inside is not followed
        else:
            os.unlink(path)
    except OSError as error:
        raise SandboxFailure(f"cannot remove {path} to seal the box: {error}") from None


def _clear_opaque(path: Path) -> bool:
    """Clear the opaque mark of the directory ``path`` (the image's entries below it show
    again); whether it had one."""
    cleared = False
    for name in OPAQUE_XATTRS:
        try:
            os.getxattr(path, name, follow_symlinks=False)
        except OSError:
            continue  # not marked (or no such attribute on this filesystem)
        try:
            os.removexattr(path, name, follow_symlinks=False)
        except OSError as error:
            raise SandboxFailure(
                f"cannot clear {name} of {path} to seal the box: {error}"
            ) from None
        cleared = True
    return cleared

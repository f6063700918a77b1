"""The id of a task's base tree, computed outside the machine (the verifier's anchor).

``/testbed`` in a Python task's machine is ``.gitignore`` and the package's directory, the bug
applied, committed by ``git add -A``; ``base_tree`` computes the same tree id from the machine's
site-packages (root filesystem or host) with the changed files in place, so a task records the
id its verifier puts ``/testbed`` back to without building the machine.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from palaestra.envs.swe_local.verifier import object_id

GITIGNORE = b"__pycache__/\n*.pyc\n"
"""``/testbed/.gitignore`` as the Dockerfile writes it (``folders.dockerfile_prefix``)."""


def _tree_object(entries: list[tuple[bytes, str, str]]) -> str:
    """The id of a tree of (mode, name, id) entries, in git's order (a tree's name sorts as
    if it ended in ``/``)."""
    lines = sorted(
        (
            name.encode() + (b"/" if mode == b"40000" else b""),
            b"%s %s\0" % (mode, name.encode()),
            oid,
        )
        for mode, name, oid in entries
    )
    return object_id("tree", b"".join(line + bytes.fromhex(oid) for _, line, oid in lines))


def _tree(directory: Path, relative: str, changed: Mapping[str, bytes]) -> str | None:
    """The id of the tree ``git add -A`` makes of ``directory`` (None when it holds nothing
    git tracks): ``__pycache__`` directories and ``*.pyc`` files ignored, ``changed`` (path
    in the repository to content) in place of what is on disk."""
    entries: list[tuple[bytes, str, str]] = []
    for entry in os.scandir(directory):
        name, path = entry.name, f"{relative}{entry.name}"
        if entry.is_symlink():
            entries.append((b"120000", name, object_id("blob", os.fsencode(os.readlink(entry)))))
        elif entry.is_dir():
            sub = None if name == "__pycache__" else _tree(Path(entry.path), f"{path}/", changed)
            if sub is not None:
                entries.append((b"40000", name, sub))
        elif entry.is_file() and not name.endswith(".pyc"):
            data = changed[path] if path in changed else Path(entry.path).read_bytes()
            mode = b"100755" if entry.stat().st_mode & stat.S_IXUSR else b"100644"
            entries.append((mode, name, object_id("blob", data)))
    return _tree_object(entries) if entries else None


def base_tree(site: Path, package: str, changed: Mapping[str, bytes]) -> str:
    """The id of the base commit's tree in the task's machine: ``/testbed`` holding
    ``.gitignore`` and ``site/package``, with ``changed`` (the bug) in place."""
    inner = _tree(site / package, f"{package}/", changed)
    if inner is None:
        raise SystemExit(f"{site / package}: no files")
    top = [(b"100644", ".gitignore", object_id("blob", GITIGNORE)), (b"40000", package, inner)]
    return _tree_object(top)

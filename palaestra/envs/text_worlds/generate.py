"""Make text_worlds games ahead of a run: ``python -m palaestra.envs.text_worlds.generate``.

Writes ``--num-tasks`` task rows (``--output``, JSON lines) and compiles each row's game into
the cache, so a collection starts at once; with ``--tasks FILE`` it compiles the games of an
existing task file instead (the example tasks: ``--tasks palaestra/envs/text_worlds/tasks.jsonl``).
The same ``--seed`` and settings give the same tasks and the same games.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import orjson

from palaestra import JsonDict, PalaestraError, read_objects
from palaestra.envs.text_worlds.environment import TextWorlds
from palaestra.envs.text_worlds.worlds import DIFFICULTIES, KINDS, cache_dir, game_file, world_of


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m palaestra.envs.text_worlds.generate", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--num-tasks", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kind", choices=KINDS, default="cooking")
    parser.add_argument("--difficulty", choices=DIFFICULTIES, default="easy")
    parser.add_argument("--world-size", type=int, default=None, help="rooms")
    parser.add_argument("--quest-length", type=int, default=None, help="actions (custom)")
    parser.add_argument("--output", type=Path, default=None, help="task rows to write")
    parser.add_argument("--tasks", type=Path, default=None, help="compile this file's games")
    options = parser.parse_args(argv)
    try:
        if options.tasks is not None:
            rows: list[JsonDict] = [
                row for _, row in read_objects(options.tasks) if isinstance(row, dict)
            ]
        else:
            env = TextWorlds(
                options.kind, options.difficulty, options.world_size, options.quest_length
            )
            rows = list(env.generate_tasks(options.num_tasks, options.seed))
        started = time.monotonic()
        for number, row in enumerate(rows, 1):
            path = game_file(world_of(row))
            print(f"{number}/{len(rows)} {path.name}", file=sys.stderr)
        if options.output is not None:
            options.output.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
        print(
            f"{len(rows)} games in {cache_dir()} ({time.monotonic() - started:.0f} s)",
            file=sys.stderr,
        )
    except PalaestraError as problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

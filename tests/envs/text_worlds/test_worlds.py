"""Games made by the real TextWorld into a scratch cache: the recipe in a task row is enough."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from palaestra.envs.text_worlds.environment import TextWorlds
from palaestra.envs.text_worlds.worlds import World, cache_dir, game_file, walkthrough, world_of


@pytest.fixture
def scratch_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PALAESTRA_TEXT_WORLDS", str(tmp_path / "cache"))
    return tmp_path


def test_the_same_recipe_makes_the_same_game_byte_for_byte(scratch_cache: Path) -> None:
    row = next(TextWorlds("custom", world_size=2, quest_length=2).generate_tasks(1, 11))
    world = world_of(row)
    first = game_file(world).read_bytes()
    assert game_file(world).parent == cache_dir() and cache_dir().is_relative_to(scratch_cache)
    for made in cache_dir().iterdir():
        made.unlink()
    again = game_file(world)
    assert again.read_bytes() == first
    assert [p.name for p in cache_dir().iterdir() if p.name.startswith(".")] == []
    other = World(world.kind, world.settings, world.seed + 1)
    assert game_file(other).read_bytes() != first


def test_world_size_and_quest_length_reach_the_generator(scratch_cache: Path) -> None:
    import textworld

    row = next(TextWorlds("custom", world_size=4, quest_length=3).generate_tasks(1, 5))
    world = world_of(row)
    game = textworld.Game.load(str(game_file(world).with_suffix(".json")))
    assert len(game.world.rooms) == 4
    assert len(walkthrough(world)) == 3


def test_the_generator_command_writes_tasks_and_fills_the_cache(scratch_cache: Path) -> None:
    output = scratch_cache / "tasks.jsonl"
    done = subprocess.run(
        [
            sys.executable, "-m", "palaestra.envs.text_worlds.generate", "--num-tasks", "2",
            "--seed", "4", "--kind", "custom", "--world-size", "2", "--quest-length", "1",
            "--output", str(output),
        ],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [orjson.loads(line) for line in output.read_bytes().splitlines()]
    assert rows == list(TextWorlds("custom", world_size=2, quest_length=1).generate_tasks(2, 4))
    assert sorted(p.suffix for p in cache_dir().iterdir()) == [".json", ".json", ".z8", ".z8"]
    bad = subprocess.run(
        [sys.executable, "-m", "palaestra.envs.text_worlds.generate", "--quest-length", "2"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0
    assert "quest_length is for kind=custom" in bad.stderr

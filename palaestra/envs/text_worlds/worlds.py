"""TextWorld games: what a task's ``world`` says, and the compiled game it names.

A task row carries the recipe of its game (``kind``, ``settings``, ``seed``), not the game:
TextWorld builds the same game from the same recipe (the compiled story file is byte for
byte the same), so a task file stays small and the games are made on this machine, offline,
by TextWorld's own generator and Inform 7 compiler (both shipped in its wheel). A compiled
game is cached under ``~/.cache/palaestra/text_worlds/textworld-<version>/`` and made on first
use (a few seconds); ``python -m palaestra.envs.text_worlds.generate`` makes them ahead.

``textworld`` is imported only here, and only when a game is made or played, so listing the
environments needs no TextWorld.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import warnings
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from palaestra import ConfigError, InvalidTask, JsonDict

KINDS = ("cooking", "custom")
DIFFICULTIES = ("easy", "medium", "hard")

COOKING: dict[str, JsonDict] = {
    # TextWorld's cooking challenge (the First TextWorld Problems games): find the recipe's
    # ingredients, prepare them as the cookbook says, cook the meal and eat it.
    "easy": {"recipe": 1, "take": 1, "go": 1, "open": False, "cook": False, "cut": False},
    "medium": {"recipe": 2, "take": 2, "go": 6, "open": True, "cook": False, "cut": True},
    "hard": {"recipe": 3, "take": 3, "go": 9, "open": True, "cook": True, "cut": True},
}
CUSTOM: dict[str, JsonDict] = {
    # A random house of ``world_size`` rooms and one quest of ``quest_length`` actions.
    "easy": {"world_size": 3, "objects": 5, "quest_length": 3},
    "medium": {"world_size": 6, "objects": 10, "quest_length": 5},
    "hard": {"world_size": 9, "objects": 15, "quest_length": 8},
}
ROOMS_OF_COOKING = (1, 6, 9, 12)
"""The house sizes TextWorld's cooking challenge knows."""

_textworld = threading.Lock()
"""TextWorld's generator, compiler and game loader are not made for threads: they share its
module-level logic parser (``textworld.logic``), whose memo tables two threads corrupt (a
seed then raises ``IndexError`` or ``TypeError`` from deep in the parser). So one of them runs
at a time in this process, whichever environment instance asks: a lock of the instance would
leave two instances racing on the one parser. Playing a started game (reset, step) needs no
lock: each game has its own copy of the Z-machine interpreter."""


@dataclass(frozen=True, slots=True)
class World:
    """The recipe of one game: what TextWorld is asked to make."""

    kind: str
    settings: JsonDict
    seed: int

    def row(self) -> JsonDict:
        return {"kind": self.kind, "settings": dict(self.settings), "seed": self.seed}

    def key(self) -> str:
        text = json.dumps(self.row(), sort_keys=True)
        return f"{self.kind}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def settings_for(
    kind: str, difficulty: str, world_size: int | None = None, quest_length: int | None = None
) -> JsonDict:
    """The generator's settings for ``kind`` at ``difficulty``, with the size overrides."""
    if kind not in KINDS:
        raise ConfigError(f"text_worlds: kind must be one of {', '.join(KINDS)}, not {kind!r}")
    if difficulty not in DIFFICULTIES:
        raise ConfigError(
            f"text_worlds: difficulty must be one of {', '.join(DIFFICULTIES)}, not {difficulty!r}"
        )
    for name, value in (("world_size", world_size), ("quest_length", quest_length)):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise ConfigError(f"text_worlds: {name} must be a whole number >= 1, not {value!r}")
    if kind == "cooking":
        settings = dict(COOKING[difficulty])
        if quest_length is not None:
            raise ConfigError(
                "text_worlds: quest_length is for kind=custom; a cooking quest's length "
                "follows its recipe (difficulty)"
            )
        if world_size is not None:
            if world_size not in ROOMS_OF_COOKING:
                raise ConfigError(
                    "text_worlds: a cooking world_size must be one of "
                    f"{', '.join(map(str, ROOMS_OF_COOKING))}, not {world_size}"
                )
            settings["go"] = world_size
        return settings
    settings = dict(CUSTOM[difficulty])
    if world_size is not None:
        settings["world_size"] = world_size
    if quest_length is not None:
        settings["quest_length"] = quest_length
    return settings


def world_of(task: JsonDict) -> World:
    """The task's ``world``, checked: a bad row is an ``InvalidTask`` saying what is wrong."""
    world = task.get("world")
    if not isinstance(world, dict):
        raise InvalidTask("a text_worlds task needs a 'world' object (kind, settings, seed)")
    kind, settings, seed = world.get("kind"), world.get("settings"), world.get("seed")
    if kind not in KINDS:
        raise InvalidTask(f"text_worlds: world.kind must be one of {', '.join(KINDS)}")
    if not isinstance(settings, dict):
        raise InvalidTask("text_worlds: world.settings must be an object")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise InvalidTask("text_worlds: world.seed must be a whole number >= 0")
    return World(str(kind), settings, seed)


def textworld_version() -> str:
    """TextWorld's version; a one-line ``ConfigError`` when it or its engine is missing."""
    try:
        metadata.version("jericho")
        return metadata.version("textworld")
    except metadata.PackageNotFoundError as missing:
        raise ConfigError(
            f"text_worlds needs {missing.name or 'textworld'}: bash scripts/install.sh "
            "(or pip install 'palaestra[text_worlds]')"
        ) from None


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/palaestra/text_worlds/textworld-<version>`` (``PALAESTRA_TEXT_WORLDS``
    overrides the part before the version)."""
    base = os.environ.get("PALAESTRA_TEXT_WORLDS")
    if base:
        root = Path(base)
    else:
        cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = Path(cache) / "palaestra" / "text_worlds"
    return root / f"textworld-{textworld_version()}"


def game_file(world: World) -> Path:
    """The compiled game of ``world``, made (and cached) if it is not there yet."""
    path = cache_dir() / f"{world.key()}.z8"
    if path.is_file() and path.with_suffix(".json").is_file():
        return path
    with _textworld:
        if not path.is_file():
            _make(world, path)
    return path


def _make(world: World, path: Path) -> None:
    """Generate and compile ``world`` in a scratch folder, then move it into the cache (the
    description first, the story file last: a story file present means both are whole)."""
    import textworld
    import textworld.challenges
    import textworld.generator

    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".making-") as scratch:
        options = textworld.GameOptions()
        options.seeds = world.seed
        options.path = str(Path(scratch) / path.name)
        options.force_recompile = True
        settings = world.settings
        try:
            if world.kind == "cooking":
                make = textworld.challenges.CHALLENGES["tw-cooking"][1]
                cooking = {"recipe_seed": world.seed, "split": None, "drop": False, **settings}
                game = make(settings=cooking, options=options)
            else:
                options.nb_rooms = int(settings["world_size"])
                options.nb_objects = int(settings["objects"])
                length = int(settings["quest_length"])
                options.chaining.min_length = options.chaining.max_length = length
                options.chaining.max_depth = length
                options.chaining.min_breadth = options.chaining.max_breadth = 1
                game = textworld.generator.make_game(options)
            made = Path(textworld.generator.compile_game(game, options))
        except (KeyError, TypeError, ValueError) as bad:
            raise InvalidTask(f"text_worlds: TextWorld cannot make {world.row()}: {bad}") from bad
        os.replace(made.with_suffix(".json"), path.with_suffix(".json"))
        os.replace(made, path)


def walkthrough(world: World) -> list[str]:
    """TextWorld's walkthrough of the game: the commands that win it."""
    import textworld

    description = game_file(world).with_suffix(".json")
    with _textworld:
        game = textworld.Game.load(str(description))
    commands = game.walkthrough
    if not commands:
        raise InvalidTask(f"text_worlds: TextWorld gives no walkthrough for {world.row()}")
    return [str(command) for command in commands]


def start(world: World) -> Any:
    """A TextWorld environment playing ``world``, not yet reset."""
    import textworld

    path = game_file(world)
    # Jericho warns that it cannot find the score of a game it does not know; TextWorld keeps
    # the score itself (from the game's description), so the warning says nothing here.
    warnings.filterwarnings("ignore", message=r"Game '.*' is not fully supported")
    infos = textworld.EnvInfos(
        admissible_commands=True, score=True, max_score=True, won=True, lost=True, moves=True
    )
    with _textworld:
        return textworld.start(str(path), request_infos=infos)

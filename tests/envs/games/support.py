"""Shared helpers of the games tests: play a game's actions, generate puzzles."""

from __future__ import annotations

import random

from palaestra import JsonDict
from palaestra.envs.games.core import Game, Illegal, State


def played(game: Game, puzzle: JsonDict, actions: list[str]) -> State:
    """The state after ``actions`` from the start of ``puzzle`` (each must be legal)."""
    state = game.start(puzzle)
    for action in actions:
        game.play(state, action)
    return state


def refused(game: Game, state: State, action: str) -> str:
    """The refusal of ``action``; the state must be unchanged by it."""
    before = repr(state)
    try:
        game.play(state, action)
    except Illegal as illegal:
        assert repr(state) == before
        return str(illegal)
    raise AssertionError(f"{action!r} was accepted")


def puzzles(game: Game, difficulty: str, seeds: range) -> list[JsonDict]:
    return [game.generate(random.Random(seed), difficulty) for seed in seeds]

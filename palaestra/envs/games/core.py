"""What every game of the pack is: a puzzle generator, rules, a solver, and a value to reward.

A game is a plain object (``Game``) the environment drives; its state is a JSON-able dict so a
session can be inspected or served. Rewards are potential-based: each game says how far a
state is towards the goal (``progress`` in [0, 1]); the value of a state is 1 when solved,
else ``PARTIAL`` x progress (0 after a loss); a step's reward is the change in value. So the
per-step rewards add up to the final verdict's reward, a null policy (no legal move) scores
exactly 0, and only a solved game scores 1.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from palaestra import JsonDict

DIFFICULTIES = ("easy", "medium", "hard")
PARTIAL = 0.5
"""The most an unsolved game is worth: progress counts, but only solving scores 1."""

State = dict[str, Any]


class Illegal(Exception):
    """An action the rules refuse: its message is the observation the model reads."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a legal action did: the text to show, and whether the game is over."""

    text: str
    done: bool = False


class Game:
    """One game: subclasses fill the methods; the environment adds turns, counts and rewards."""

    name: ClassVar[str]
    rules: ClassVar[str]
    """The system prompt: the rules and the action format, in a few plain sentences."""

    def generate(self, rng: random.Random, difficulty: str) -> JsonDict:
        """A new puzzle (JSON-able) of ``difficulty``, drawn from ``rng`` only."""
        raise NotImplementedError

    def start(self, puzzle: JsonDict) -> State:
        """The state before the first move."""
        raise NotImplementedError

    def show(self, state: State) -> str:
        """The state as the model reads it (the board, what is known so far)."""
        raise NotImplementedError

    def play(self, state: State, action: str) -> Outcome:
        """Apply ``action`` to ``state`` in place; raise ``Illegal`` (state untouched) when
        the rules refuse it."""
        raise NotImplementedError

    def progress(self, state: State) -> float:
        """How far ``state`` is towards the goal, in [0, 1]; 0 at the start."""
        raise NotImplementedError

    def solved(self, state: State) -> bool:
        raise NotImplementedError

    def lost(self, state: State) -> bool:
        """Whether the game ended without a win (a mine, no guesses left)."""
        return False

    def solve(self, puzzle: JsonDict) -> list[str]:
        """The oracle: actions that win ``puzzle`` from its start, one per turn."""
        raise NotImplementedError

    def value(self, state: State) -> float:
        if self.solved(state):
            return 1.0
        if self.lost(state):
            return 0.0
        return PARTIAL * min(1.0, max(0.0, self.progress(state)))


_FENCE = re.compile(r"```[a-z]*\n?|```")


def clean(action: str) -> str:
    """The action without code fences, reasoning tags or surrounding quotes."""
    text = re.sub(r"<think>.*?</think>", " ", action, flags=re.DOTALL)
    return _FENCE.sub(" ", text).strip().strip("\"'`").strip()

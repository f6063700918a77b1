"""games: a pack of turn-based puzzles (Wordle, Mastermind, Minesweeper, Sokoban, Sudoku,
Towers of Hanoi) on the reset/step protocol, with dense per-step rewards and oracle solvers.

The task row says which game and puzzle (``game``, ``difficulty``, ``puzzle``); the
constructor's ``game`` and ``difficulty`` only choose what ``generate_tasks`` draws. Each turn
the model's text is its action: a legal one changes the board, an illegal one (unreadable,
against the rules) is refused with a line saying why, shown as the next observation and
counted, never a crash. Rewards are potential-based (``core``): step rewards add up to the
verdict's reward, 1 only when solved.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from palaestra import (
    ConfigError,
    InvalidTask,
    JsonDict,
    Session,
    StepEnvironment,
    StepResult,
    Verdict,
    task_row,
)
from palaestra.envs.games.core import DIFFICULTIES, Game, Illegal, clean
from palaestra.envs.games.hanoi import Hanoi
from palaestra.envs.games.mastermind import Mastermind
from palaestra.envs.games.minesweeper import Minesweeper
from palaestra.envs.games.sokoban import Sokoban
from palaestra.envs.games.sudoku import Sudoku
from palaestra.envs.games.wordle import Wordle

GAMES: dict[str, Game] = {
    game.name: game
    for game in (Wordle(), Mastermind(), Minesweeper(), Sokoban(), Sudoku(), Hanoi())
}
"""Every game of the pack, by name."""


class Games(StepEnvironment):
    """Wordle, Mastermind, Minesweeper, Sokoban, Sudoku, Hanoi: dense rewards, oracle solvers.

    ``game`` and ``difficulty`` choose what is generated; each task carries its own."""

    name = "games"

    def __init__(self, game: str = "all", difficulty: str = "easy") -> None:
        """``game``: one name, several joined by commas, or ``all`` (every game in turn);
        ``difficulty``: easy, medium or hard."""
        text = str(game)
        names = list(GAMES) if text == "all" else [g.strip() for g in text.split(",") if g.strip()]
        unknown = [name for name in names if name not in GAMES]
        if unknown or not names:
            raise ConfigError(
                f"games: unknown game {', '.join(unknown) or repr(game)}; "
                f"known: {', '.join(GAMES)} or all"
            )
        if difficulty not in DIFFICULTIES:
            raise ConfigError(
                f"games: difficulty must be one of {', '.join(DIFFICULTIES)}, not {difficulty!r}"
            )
        self.games = names
        self.difficulty = difficulty

    def seed(self, task: JsonDict) -> Any:
        game = game_of(task)
        return {"board": game.start(task["puzzle"]), "moves": 0, "illegal": 0, "over": False}

    def reset(self, session: Session) -> str:
        game = game_of(session.task)
        return f"{game.show(session.state['board'])}\nYour move?"

    def step(self, session: Session, action: str) -> StepResult:
        game = game_of(session.task)
        state = session.state
        if state["over"]:
            return StepResult("The game is over.", terminated=True)
        board = state["board"]
        before = game.value(board)
        try:
            outcome = game.play(board, clean(action))
        except Illegal as refused:
            state["illegal"] += 1
            return StepResult(f"Illegal: {refused} Nothing changed. Your move?")
        state["moves"] += 1
        over = outcome.done or game.solved(board) or game.lost(board)
        state["over"] = over
        text = outcome.text if over else f"{outcome.text}\n{game.show(board)}\nYour move?"
        return StepResult(text, reward=game.value(board) - before, terminated=over)

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        game = game_of(session.task)
        state = session.state
        board = state["board"]
        solved = game.solved(board)
        return Verdict(
            reward=game.value(board),
            step_rewards=list(session.step_rewards),
            metrics={
                "game": game.name,
                "difficulty": session.task.get("difficulty", ""),
                "solved": solved,
                "lost": game.lost(board),
                "progress": round(1.0 if solved else game.progress(board), 4),
                "moves": state["moves"],
                "illegal_actions": state["illegal"],
            },
        )

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]]:
        """The solver's moves, one assistant message per turn."""
        return [
            [{"role": "assistant", "content": move}] for move in game_of(task).solve(task["puzzle"])
        ]

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        """``count`` puzzles, the chosen games in turn, each from its own seeded generator."""
        rng = random.Random(seed)
        for index in range(count):
            name = self.games[index % len(self.games)]
            puzzle_seed = rng.randrange(2**32)
            yield task(
                name,
                self.difficulty,
                GAMES[name].generate(random.Random(puzzle_seed), self.difficulty),
            )


def task(game: str, difficulty: str, puzzle: JsonDict) -> JsonDict:
    return task_row(None, system=GAMES[game].rules, game=game, difficulty=difficulty, puzzle=puzzle)


def game_of(task: JsonDict) -> Game:
    name = task.get("game")
    if not isinstance(name, str) or name not in GAMES or not isinstance(task.get("puzzle"), dict):
        raise InvalidTask(
            f"a games task needs 'game' (one of {', '.join(GAMES)}) and a 'puzzle' object"
        )
    return GAMES[name]

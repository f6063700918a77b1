"""Sudoku with one solution: fill the empty cells so every row, column and box holds each
number once. Generated from a random full grid by removing cells while the solution stays
unique; difficulty is the grid and how many cells are removed. A placement that clashes with
a number in its row, column or box is refused; a placement that clashes with nothing shown
but is wrong is accepted (and earns nothing). Progress: empty cells filled right / empty
cells."""

from __future__ import annotations

import random
import re

from palaestra import JsonDict
from palaestra.envs.games.core import Game, Illegal, Outcome, State

LEVELS = {"easy": (2, 10), "medium": (3, 35), "hard": (3, 50)}
"""Difficulty: (box size: 2 gives a 4x4 grid, 3 a 9x9 one; cells removed)."""
_PLACE = re.compile(
    r"r(?:ow)?\s*(\d)\s*[,/ ]?\s*c(?:ol(?:umn)?)?\s*(\d)\s*[=:]?\s*(?:is\s*)?(\d)", re.I
)
_TRIPLE = re.compile(r"^\D*(\d)\D+(\d)\D+(\d)\D*$")

Grid = list[list[int]]


class Sudoku(Game):
    name = "sudoku"
    rules = (
        "We play Sudoku. Fill every empty cell (.) with a number so that each row, each column "
        "and each box holds every number exactly once. Name cells by row and column: r2c3=4 "
        "puts 4 in row 2, column 3. You may place several numbers in one answer, separated by "
        "spaces, for example: r1c2=3 r4c1=2"
    )

    def generate(self, rng: random.Random, difficulty: str) -> JsonDict:
        box, remove = LEVELS[difficulty]
        solution = full_grid(box, rng)
        puzzle = [row[:] for row in solution]
        cells = [(r, c) for r in range(box * box) for c in range(box * box)]
        rng.shuffle(cells)
        removed = 0
        for r, c in cells:
            if removed == remove:
                break
            kept, puzzle[r][c] = puzzle[r][c], 0
            if count_solutions(puzzle, box, 2) == 1:
                removed += 1
            else:
                puzzle[r][c] = kept
        return {"box": box, "grid": puzzle, "solution": solution}

    def start(self, puzzle: JsonDict) -> State:
        return {
            "box": int(puzzle["box"]),
            "clues": [row[:] for row in puzzle["grid"]],
            "grid": [row[:] for row in puzzle["grid"]],
            "solution": puzzle["solution"],
        }

    def show(self, state: State) -> str:
        box, grid = state["box"], state["grid"]
        size = box * box

        def cells(row: list[int]) -> str:
            groups = [row[i : i + box] for i in range(0, size, box)]
            return " | ".join(" ".join(str(v) if v else "." for v in g) for g in groups)

        header = "    " + cells(list(range(1, size + 1)))
        rule = "    " + "-" * (len(header) - 4)
        lines = [header, rule]
        for r, row in enumerate(grid):
            if r and r % box == 0:
                lines.append(
                    "    "
                    + "+".join(
                        "-" * (2 * box + (0 if i in (0, box - 1) else 1)) for i in range(box)
                    )
                )
            lines.append(f"r{r + 1}  {cells(row)}")
        return "\n".join(lines)

    def play(self, state: State, action: str) -> Outcome:
        placements = parse_placements(action)
        box = state["box"]
        size = box * box
        grid = [row[:] for row in state["grid"]]
        for r, c, value in placements:
            where = f"r{r + 1}c{c + 1}"
            if not (0 <= r < size and 0 <= c < size):
                raise Illegal(f"{where} is off the grid (rows and columns 1 to {size}).")
            if not 1 <= value <= size:
                raise Illegal(f"{value} is not a number of this grid (1 to {size}).")
            if state["clues"][r][c]:
                raise Illegal(f"{where} is given ({state['clues'][r][c]}): it cannot change.")
            clash = clashes(grid, box, r, c, value)
            if clash:
                raise Illegal(f"{value} at {where} clashes: {clash} already has {value}.")
            grid[r][c] = value
        state["grid"] = grid
        placed = ", ".join(f"r{r + 1}c{c + 1}={v}" for r, c, v in placements)
        if self.solved(state):
            return Outcome(f"Placed {placed}. The grid is complete. Solved!", True)
        return Outcome(f"Placed {placed}.")

    def progress(self, state: State) -> float:
        blanks = right = 0
        for clue_row, row, answer in zip(
            state["clues"], state["grid"], state["solution"], strict=True
        ):
            for clue, value, wanted in zip(clue_row, row, answer, strict=True):
                if not clue:
                    blanks += 1
                    right += value == wanted
        return right / blanks if blanks else 1.0

    def solved(self, state: State) -> bool:
        return bool(state["grid"] == state["solution"])

    def solve(self, puzzle: JsonDict) -> list[str]:
        """One answer per row with empty cells: that row's numbers from the solution."""
        actions = []
        for r, (row, answer) in enumerate(zip(puzzle["grid"], puzzle["solution"], strict=True)):
            parts = [f"r{r + 1}c{c + 1}={answer[c]}" for c, value in enumerate(row) if not value]
            if parts:
                actions.append(" ".join(parts))
        return actions


def parse_placements(action: str) -> list[tuple[int, int, int]]:
    """Every ``r2c3=4`` (or ``row 2 col 3: 4``) of an action; a short answer may also be
    three numbers, row column value (``2 3 4``)."""
    found = [(int(r) - 1, int(c) - 1, int(v)) for r, c, v in _PLACE.findall(action)]
    if not found and (triple := _TRIPLE.match(action)) is not None and len(action) <= 24:
        r, c, v = (int(x) for x in triple.groups())
        found = [(r - 1, c - 1, v)]
    if not found:
        raise Illegal("Place a number like r2c3=4 (row 2, column 3, number 4).")
    return found


def clashes(grid: Grid, box: int, r: int, c: int, value: int) -> str:
    """Where ``value`` at (r, c) repeats a number already there: "row 2", "column 3", "the
    box"; empty when it fits."""
    if any(grid[r][j] == value for j in range(len(grid)) if j != c):
        return f"row {r + 1}"
    if any(grid[i][c] == value for i in range(len(grid)) if i != r):
        return f"column {c + 1}"
    top, left = r - r % box, c - c % box
    for i in range(top, top + box):
        for j in range(left, left + box):
            if (i, j) != (r, c) and grid[i][j] == value:
                return "its box"
    return ""


def full_grid(box: int, rng: random.Random) -> Grid:
    size = box * box
    grid = [[0] * size for _ in range(size)]

    def fill(index: int) -> bool:
        if index == size * size:
            return True
        r, c = divmod(index, size)
        values = list(range(1, size + 1))
        rng.shuffle(values)
        for value in values:
            if not clashes(grid, box, r, c, value):
                grid[r][c] = value
                if fill(index + 1):
                    return True
        grid[r][c] = 0
        return False

    fill(0)
    return grid


def count_solutions(grid: Grid, box: int, limit: int) -> int:
    """How many ways ``grid`` completes, counting no further than ``limit`` (fewest-options
    cell first)."""
    size = box * box
    work = [row[:] for row in grid]

    def options(r: int, c: int) -> list[int]:
        return [v for v in range(1, size + 1) if not clashes(work, box, r, c, v)]

    def count() -> int:
        best: tuple[int, int, list[int]] | None = None
        for r in range(size):
            for c in range(size):
                if not work[r][c]:
                    here = options(r, c)
                    if best is None or len(here) < len(best[2]):
                        best = (r, c, here)
                        if len(here) <= 1:
                            break
            if best is not None and len(best[2]) <= 1:
                break
        if best is None:
            return 1
        r, c, values = best
        total = 0
        for value in values:
            work[r][c] = value
            total += count()
            work[r][c] = 0
            if total >= limit:
                break
        return total

    return count()

"""Minesweeper: open every cell that hides no mine. The mines are laid after the first
reveal, away from it and its neighbours, so the first reveal is always safe and opens an
area. Opening a mine loses (value 0). Progress: safe cells opened / all safe cells."""

from __future__ import annotations

import random
import re

from palaestra import JsonDict
from palaestra.envs.games.core import Game, Illegal, Outcome, State

LEVELS = {"easy": (5, 5, 3), "medium": (6, 6, 6), "hard": (8, 8, 10)}
"""Difficulty: (rows, columns, mines)."""
LETTERS = "ABCDEFGHIJ"
_CELL_TIGHT = re.compile(r"(?<![A-Za-z])([A-J])([1-9]|10)(?![\dA-Za-z])")
_CELL = re.compile(r"(?<![A-Za-z])([A-Ja-j])\s*([1-9]|10)(?!\d)")
_CELL_BACKWARDS = re.compile(r"(?<!\d)([1-9]|10)\s*([A-Ja-j])(?![A-Za-z])")

Cell = tuple[int, int]


class Minesweeper(Game):
    name = "minesweeper"
    rules = (
        "We play Minesweeper. Some cells hide mines. Open all the other cells. An opened cell "
        "shows how many of its 8 neighbours hide a mine (. means none); # is a closed cell. "
        "Opening a mine loses the game. Your first cell is always safe. Name one cell per turn, "
        "column letter then row number, for example: C3"
    )

    def generate(self, rng: random.Random, difficulty: str) -> JsonDict:
        rows, cols, mines = LEVELS[difficulty]
        return {"rows": rows, "cols": cols, "mines": mines, "seed": rng.randrange(2**31)}

    def start(self, puzzle: JsonDict) -> State:
        return {
            "rows": int(puzzle["rows"]),
            "cols": int(puzzle["cols"]),
            "count": int(puzzle["mines"]),
            "seed": int(puzzle["seed"]),
            "mines": None,
            "open": [],
            "boom": False,
        }

    def show(self, state: State) -> str:
        rows, cols = state["rows"], state["cols"]
        opened = {tuple(cell) for cell in state["open"]}
        mines = lay(state) if state["mines"] is not None else set()
        lines = ["   " + " ".join(LETTERS[:cols])]
        for r in range(rows):
            marks = []
            for c in range(cols):
                if (r, c) not in opened:
                    marks.append("#")
                else:
                    near = neighbours(state, (r, c)) & mines
                    marks.append(str(len(near)) if near else ".")
            lines.append(f"{r + 1:>2} " + " ".join(marks))
        return "\n".join(lines)

    def play(self, state: State, action: str) -> Outcome:
        r, c = parse_cell(action, state["rows"], state["cols"])
        name = f"{LETTERS[c]}{r + 1}"
        if [r, c] in state["open"]:
            raise Illegal(f"{name} is already open.")
        if state["mines"] is None:
            state["mines"] = sorted(place(state, (r, c)))
        mines = lay(state)
        if (r, c) in mines:
            state["boom"] = True
            state["open"].append([r, c])
            return Outcome(f"{name} hid a mine. You lose.", True)
        before = len(state["open"])
        flood(state, (r, c), mines)
        opened = len(state["open"]) - before
        if self.solved(state):
            return Outcome(f"Opened {name}. Every safe cell is open. Solved!", True)
        return Outcome(f"Opened {name} ({opened} cell{'s' if opened != 1 else ''}).")

    def progress(self, state: State) -> float:
        return len(state["open"]) / safe_cells(state)

    def solved(self, state: State) -> bool:
        return not state["boom"] and len(state["open"]) == safe_cells(state)

    def lost(self, state: State) -> bool:
        return bool(state["boom"])

    def solve(self, puzzle: JsonDict) -> list[str]:
        """Knows the board: opens the middle cell first, then each safe cell still closed."""
        state = self.start(puzzle)
        first = (state["rows"] // 2, state["cols"] // 2)
        actions = [f"{LETTERS[first[1]]}{first[0] + 1}"]
        self.play(state, actions[0])
        mines = lay(state)
        for r in range(state["rows"]):
            for c in range(state["cols"]):
                if (r, c) not in mines and [r, c] not in state["open"]:
                    actions.append(f"{LETTERS[c]}{r + 1}")
                    self.play(state, actions[-1])
        return actions


def safe_cells(state: State) -> int:
    return int(state["rows"] * state["cols"] - state["count"])


def lay(state: State) -> set[Cell]:
    return {(r, c) for r, c in state["mines"]}


def neighbours(state: State, cell: Cell) -> set[Cell]:
    r, c = cell
    return {
        (r + dr, c + dc)
        for dr in (-1, 0, 1)
        for dc in (-1, 0, 1)
        if (dr or dc) and 0 <= r + dr < state["rows"] and 0 <= c + dc < state["cols"]
    }


def place(state: State, first: Cell) -> list[list[int]]:
    """The mines, drawn from the puzzle's seed away from the first cell and its neighbours."""
    keep_clear = neighbours(state, first) | {first}
    cells = [
        (r, c)
        for r in range(state["rows"])
        for c in range(state["cols"])
        if (r, c) not in keep_clear
    ]
    chosen = random.Random(state["seed"]).sample(cells, state["count"])
    return [[r, c] for r, c in chosen]


def flood(state: State, cell: Cell, mines: set[Cell]) -> None:
    """Open ``cell``, and around every opened cell with no mine near, its neighbours."""
    opened = {tuple(x) for x in state["open"]}
    todo = [cell]
    while todo:
        current = todo.pop()
        if current in opened:
            continue
        opened.add(current)
        state["open"].append(list(current))
        around = neighbours(state, current)
        if not around & mines:
            todo.extend(sorted(around - opened))


def parse_cell(action: str, rows: int, cols: int) -> Cell:
    """The cell an action names: a capital letter and a row number together (``C3``) first,
    else looser forms (``c 3``, ``3C``) so prose like "a 5x5 board" is not read first."""
    found = _CELL_TIGHT.search(action) or _CELL.search(action)
    if found is not None:
        letter, number = found.group(1), found.group(2)
    elif (backwards := _CELL_BACKWARDS.search(action)) is not None:
        number, letter = backwards.group(1), backwards.group(2)
    else:
        raise Illegal("Name one cell, column letter then row number, for example: C3")
    r, c = int(number) - 1, LETTERS.index(letter.upper())
    if not (0 <= r < rows and 0 <= c < cols):
        last = f"{LETTERS[cols - 1]}{rows}"
        raise Illegal(f"{letter.upper()}{number} is off the board (A1 to {last}).")
    return r, c

"""Sokoban: push every box onto a goal. Levels are generated solvable by playing backwards
from the solved position (the player pulls boxes off their goals); difficulty is the room
and how many boxes and pulls. Progress: boxes on goals / boxes (no box starts on a goal)."""

from __future__ import annotations

import random
import re
from collections import deque

from palaestra import JsonDict
from palaestra.envs.games.core import Game, Illegal, Outcome, State

LEVELS = {"easy": (5, 1, 3, 2), "medium": (6, 2, 6, 4), "hard": (7, 3, 10, 6)}
"""Difficulty: (room side, boxes, pulls made when playing backwards, fewest pushes the
shortest solution must make)."""
MOVES = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}
WORDS = {"up": "U", "down": "D", "left": "L", "right": "R"}
WORDS |= {"north": "U", "south": "D", "west": "L", "east": "R"}
SEARCH_LIMIT = 200_000
"""Most positions the breadth-first solver visits before the recorded solution is used."""
_CHOICE = re.compile(r"\b(?:up|down|left|right)\b,?\s+or\s+(?:up|down|left|right)\b", re.I)
"""Directions offered as a choice ("left or right"): an echo of the rules, not moves."""
_WORDS = re.compile(r"\b(up|down|left|right|north|south|east|west)\b", re.I)

Cell = tuple[int, int]


class Sokoban(Game):
    name = "sokoban"
    rules = (
        "We play Sokoban. The map: # wall, @ you, $ box, . goal, * box on a goal, + you on a "
        "goal, _ floor. Push every box onto a goal. You move one square up, down, left or "
        "right; walking into a box pushes it one square if the square behind it is free. You "
        "cannot pull boxes. Answer with moves: up, down, left or right (or U, D, L, R; several "
        "in a row like UULR)."
    )

    def generate(self, rng: random.Random, difficulty: str) -> JsonDict:
        side, boxes, pulls, pushes = LEVELS[difficulty]
        while True:
            level = reverse_play(rng, side, boxes, pulls)
            if level is None:
                continue
            walls, goals, placed, player = parse_map(level)
            path = shortest(walls, goals, frozenset(placed), player)
            if path is not None and count_pushes(path, walls, placed, player) >= pushes:
                return {"map": level}

    def start(self, puzzle: JsonDict) -> State:
        _, _, boxes, player = parse_map(puzzle["map"])
        return {"map": puzzle["map"], "boxes": sorted(map(list, boxes)), "player": list(player)}

    def show(self, state: State) -> str:
        walls, goals, _, _ = parse_map(state["map"])
        return render(
            state["map"], walls, goals, {tuple(b) for b in state["boxes"]}, tuple(state["player"])
        )

    def play(self, state: State, action: str) -> Outcome:
        moves = parse_moves(action)
        walls, goals, _, _ = parse_map(state["map"])
        boxes = {tuple(b) for b in state["boxes"]}
        player = tuple(state["player"])
        pushed = 0
        for number, move in enumerate(moves):
            step = MOVES[move]
            ahead = (player[0] + step[0], player[1] + step[1])
            if ahead in walls:
                raise Illegal(_where(number, moves) + f"{_name(move)} walks into a wall.")
            if ahead in boxes:
                behind = (ahead[0] + step[0], ahead[1] + step[1])
                if behind in walls or behind in boxes:
                    raise Illegal(_where(number, moves) + f"the box {_name(move)} cannot move.")
                boxes = (boxes - {ahead}) | {behind}
                pushed += 1
            player = ahead
        state["boxes"] = sorted(map(list, boxes))
        state["player"] = list(player)
        done = boxes <= goals
        said = f"Moved {' '.join(_name(m) for m in moves)}" + (
            f", pushed {pushed}." if pushed else "."
        )
        return Outcome(said + (" Every box is on a goal. Solved!" if done else ""), done)

    def progress(self, state: State) -> float:
        _, goals, _, _ = parse_map(state["map"])
        return sum(tuple(b) in goals for b in state["boxes"]) / len(state["boxes"])

    def solved(self, state: State) -> bool:
        _, goals, _, _ = parse_map(state["map"])
        return all(tuple(b) in goals for b in state["boxes"])

    def solve(self, puzzle: JsonDict) -> list[str]:
        """The fewest moves (breadth-first), one move per turn."""
        walls, goals, boxes, player = parse_map(puzzle["map"])
        path = shortest(walls, goals, frozenset(boxes), player)
        if path is None:
            raise ValueError("this level has no solution within the search limit")
        return list(path)


def count_pushes(path: str, walls: set[Cell], boxes: set[Cell], player: Cell) -> int:
    pushed = 0
    for move in path:
        dr, dc = MOVES[move]
        player = (player[0] + dr, player[1] + dc)
        if player in boxes:
            boxes = (boxes - {player}) | {(player[0] + dr, player[1] + dc)}
            pushed += 1
    return pushed


def _name(move: str) -> str:
    return {"U": "up", "D": "down", "L": "left", "R": "right"}[move]


def _where(number: int, moves: list[str]) -> str:
    return f"Move {number + 1} of {len(moves)}: " if len(moves) > 1 else ""


def parse_moves(action: str) -> list[str]:
    """The moves an action spells: words (``up``, ``left``...) or a run of U/D/L/R letters."""
    if _CHOICE.search(action):
        raise Illegal("Choose the moves: 'up or down' is not a move.")
    words = _WORDS.findall(action)
    if words:
        return [WORDS[w.lower()] for w in words]
    compact = re.sub(r"[\s,.;-]", "", action).upper()
    if compact and len(compact) <= 40 and set(compact) <= set(MOVES):
        return list(compact)
    raise Illegal("Answer with moves: up, down, left or right (or U, D, L, R).")


def parse_map(lines: list[str]) -> tuple[set[Cell], set[Cell], set[Cell], Cell]:
    walls: set[Cell] = set()
    goals: set[Cell] = set()
    boxes: set[Cell] = set()
    player = (0, 0)
    for r, line in enumerate(lines):
        for c, mark in enumerate(line):
            if mark == "#":
                walls.add((r, c))
            if mark in ".*+":
                goals.add((r, c))
            if mark in "$*":
                boxes.add((r, c))
            if mark in "@+":
                player = (r, c)
    return walls, goals, boxes, player


def render(
    lines: list[str], walls: set[Cell], goals: set[Cell], boxes: set[Cell], player: Cell
) -> str:
    out = []
    for r, line in enumerate(lines):
        row = []
        for c in range(len(line)):
            cell = (r, c)
            if cell in walls:
                row.append("#")
            elif cell in boxes:
                row.append("*" if cell in goals else "$")
            elif cell == player:
                row.append("+" if cell in goals else "@")
            else:
                row.append("." if cell in goals else "_")
        out.append("".join(row))
    return "\n".join(out)


def reverse_play(rng: random.Random, side: int, count: int, pulls: int) -> list[str] | None:
    """A level made by pulling boxes off their goals: ``side`` x ``side`` floor inside a wall,
    a few inner walls, ``count`` boxes; None when the walk left a box on a goal."""
    size = side + 2
    walls = {
        (r, c) for r in range(size) for c in range(size) if r in (0, size - 1) or c in (0, size - 1)
    }
    inside = [(r, c) for r in range(1, size - 1) for c in range(1, size - 1)]
    walls |= set(rng.sample(inside, rng.randint(0, side // 2)))
    floor = [cell for cell in inside if cell not in walls]
    goals = set(rng.sample(floor, count))
    boxes = set(goals)
    player = rng.choice([cell for cell in floor if cell not in boxes])
    made = 0
    for _ in range(pulls * 40):
        dr, dc = rng.choice(list(MOVES.values()))
        back = (player[0] - dr, player[1] - dc)  # the player steps away from (dr, dc)
        if back in walls or back in boxes:
            continue
        box = (player[0] + dr, player[1] + dc)
        if box in boxes and rng.random() < 0.7:
            boxes = (boxes - {box}) | {player}
            made += 1
        player = back
        if made >= pulls and not boxes & goals:
            break
    if boxes & goals or made < pulls:
        return None
    return render([" " * size] * size, walls, goals, boxes, player).splitlines()


def shortest(
    walls: set[Cell], goals: set[Cell], boxes: frozenset[Cell], player: Cell
) -> str | None:
    """The fewest moves that put every box on a goal (breadth-first over positions)."""
    start = (player, boxes)
    came: dict[tuple[Cell, frozenset[Cell]], tuple[tuple[Cell, frozenset[Cell]], str] | None] = {
        start: None
    }
    queue = deque([start])
    while queue and len(came) < SEARCH_LIMIT:
        position = queue.popleft()
        here, placed = position
        if placed <= goals:
            moves = []
            while came[position] is not None:
                position, move = came[position]  # type: ignore[misc]
                moves.append(move)
            return "".join(reversed(moves))
        for move, (dr, dc) in MOVES.items():
            ahead = (here[0] + dr, here[1] + dc)
            if ahead in walls:
                continue
            after = placed
            if ahead in placed:
                behind = (ahead[0] + dr, ahead[1] + dc)
                if behind in walls or behind in placed:
                    continue
                after = (placed - {ahead}) | {behind}
            nxt = (ahead, after)
            if nxt not in came:
                came[nxt] = (position, move)
                queue.append(nxt)
    return None

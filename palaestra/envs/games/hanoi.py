"""Towers of Hanoi: move the stack from peg A to peg C, one disk at a time, never a larger
disk on a smaller one. Progress: 1 - (optimal moves left) / (2^n - 1), so a move towards the
goal earns a step reward and a move away costs one."""

from __future__ import annotations

import random
import re

from palaestra import JsonDict
from palaestra.envs.games.core import Game, Illegal, Outcome, State

PEGS = "ABC"
DISKS = {"easy": 3, "medium": 4, "hard": 5}


class Hanoi(Game):
    name = "hanoi"
    rules = (
        "We play Towers of Hanoi. There are three pegs, A, B and C. All disks start on peg A, "
        "the largest at the bottom. Move them all to peg C. Each turn, move the top disk of one "
        "peg onto another peg; never put a larger disk on a smaller one. Answer with the two "
        "pegs, from and to, for example: A C"
    )

    def generate(self, rng: random.Random, difficulty: str) -> JsonDict:
        return {"disks": DISKS[difficulty]}

    def start(self, puzzle: JsonDict) -> State:
        n = int(puzzle["disks"])
        return {"pegs": [list(range(n, 0, -1)), [], []], "disks": n}

    def show(self, state: State) -> str:
        lines = []
        for name, peg in zip(PEGS, state["pegs"], strict=True):
            disks = " ".join(map(str, peg)) if peg else "(empty)"
            lines.append(f"{name}: {disks}")
        return "Pegs (bottom to top, bigger number = bigger disk):\n" + "\n".join(lines)

    def play(self, state: State, action: str) -> Outcome:
        source, target = parse_move(action)
        pegs = state["pegs"]
        if source == target:
            raise Illegal(f"Peg {PEGS[source]} to itself is not a move.")
        if not pegs[source]:
            raise Illegal(f"Peg {PEGS[source]} is empty: there is no disk to move.")
        disk = pegs[source][-1]
        if pegs[target] and pegs[target][-1] < disk:
            raise Illegal(f"Disk {disk} cannot go on disk {pegs[target][-1]}: it is larger.")
        pegs[target].append(pegs[source].pop())
        done = self.solved(state)
        said = f"Moved disk {disk} from {PEGS[source]} to {PEGS[target]}."
        return Outcome(said + (" All disks are on C. Solved!" if done else ""), done)

    def progress(self, state: State) -> float:
        total: int = 2 ** int(state["disks"]) - 1
        return 1.0 - moves_left(state["pegs"]) / total

    def solved(self, state: State) -> bool:
        return len(state["pegs"][2]) == int(state["disks"])

    def solve(self, puzzle: JsonDict) -> list[str]:
        moves: list[str] = []

        def move(n: int, source: int, target: int, spare: int) -> None:
            if n:
                move(n - 1, source, spare, target)
                moves.append(f"{PEGS[source]} {PEGS[target]}")
                move(n - 1, spare, target, source)

        move(int(puzzle["disks"]), 0, 2, 1)
        return moves


def parse_move(action: str) -> tuple[int, int]:
    """The (from, to) pegs an action names: its first two capital peg letters; in a short
    answer also small letters or the numbers 1-3 ("a c", "1 3", "A->C")."""
    found = re.findall(r"(?<![A-Za-z])([ABC])(?![A-Za-z])", action)
    if len(found) < 2 and len(action) <= 24:
        found = re.findall(r"(?<![A-Za-z0-9])([ABCabc123])(?![A-Za-z0-9])", action)
    if len(found) < 2:
        raise Illegal("Name two pegs, from and to, for example: A C")
    source, target = (
        "123".index(peg) if peg.isdigit() else PEGS.index(peg.upper()) for peg in found[:2]
    )
    return source, target


def moves_left(pegs: list[list[int]]) -> int:
    """The fewest moves from ``pegs`` to every disk on C (the classic recursion: the largest
    disk not yet on its target peg forces the smaller ones onto the spare one first)."""
    where = {disk: index for index, peg in enumerate(pegs) for disk in peg}
    left, target = 0, 2
    for disk in sorted(where, reverse=True):
        if where[disk] != target:
            left += 2 ** (disk - 1)
            target = 3 - where[disk] - target
    return left

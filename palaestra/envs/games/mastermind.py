"""Mastermind: guess the hidden code of coloured pegs (letters). Each guess is answered with
black pegs (right colour, right place) and white pegs (right colour, wrong place). Progress
is information: 1 - ln(codes still possible) / ln(all codes)."""

from __future__ import annotations

import itertools
import math
import random
import re
from collections import Counter

from palaestra import JsonDict
from palaestra.envs.games.core import Game, Illegal, Outcome, State

LEVELS = {"easy": (4, 3, 8), "medium": (6, 4, 10), "hard": (8, 5, 12)}
"""Difficulty: (colours, pegs, guesses allowed)."""
COLOURS = "ABCDEFGH"
SCORED = 400
"""Most possible codes the solver scores every consistent guess against (Knuth's minimax,
restricted to consistent guesses); with more it takes the first consistent code."""


def pegs(guess: str, code: str) -> tuple[int, int]:
    """(black, white): exact matches, then colours in common elsewhere."""
    black = sum(g == c for g, c in zip(guess, code, strict=True))
    common = sum((Counter(guess) & Counter(code)).values())
    return black, common - black


class Mastermind(Game):
    name = "mastermind"
    rules = (
        "We play Mastermind. I hide a code of coloured pegs; colours are letters. After each "
        "guess I answer with black pegs (right colour in the right place) and white pegs (right "
        "colour in a wrong place). Colours may repeat. Answer with just your guess, the letters "
        "of the code, for example: ABCD"
    )

    def generate(self, rng: random.Random, difficulty: str) -> JsonDict:
        colours, length, guesses = LEVELS[difficulty]
        code = "".join(rng.choice(COLOURS[:colours]) for _ in range(length))
        return {"colours": colours, "pegs": length, "code": code, "guesses": guesses}

    def start(self, puzzle: JsonDict) -> State:
        return {
            "code": puzzle["code"],
            "colours": int(puzzle["colours"]),
            "limit": int(puzzle["guesses"]),
            "guesses": [],
        }

    def show(self, state: State) -> str:
        colours = " ".join(COLOURS[: state["colours"]])
        head = f"Code: {len(state['code'])} pegs, colours {colours}."
        lines = [
            f"{guess}  black {b}, white {w}"
            for guess in state["guesses"]
            for b, w in [pegs(guess, state["code"])]
        ]
        left = state["limit"] - len(state["guesses"])
        return "\n".join([head, *lines, f"Guesses left: {left}."])

    def play(self, state: State, action: str) -> Outcome:
        guess = parse_guess(action, len(state["code"]), state["colours"])
        state["guesses"].append(guess)
        black, white = pegs(guess, state["code"])
        if black == len(state["code"]):
            return Outcome(f"{guess}  black {black}: you cracked the code. Solved!", True)
        said = f"{guess}  black {black}, white {white}"
        if len(state["guesses"]) >= state["limit"]:
            return Outcome(f"{said}. No guesses left: the code was {state['code']}.", True)
        return Outcome(said)

    def progress(self, state: State) -> float:
        everything = state["colours"] ** len(state["code"])
        left = len(consistent(state["code"], state["colours"], state["guesses"]))
        return 1.0 - math.log(left) / math.log(everything)

    def solved(self, state: State) -> bool:
        return bool(state["guesses"]) and state["guesses"][-1] == state["code"]

    def lost(self, state: State) -> bool:
        return not self.solved(state) and len(state["guesses"]) >= state["limit"]

    def solve(self, puzzle: JsonDict) -> list[str]:
        code, colours = puzzle["code"], int(puzzle["colours"])
        length = len(code)
        palette = COLOURS[:colours]
        # Knuth's kind of opening: two colours, half and half (AABB, AAB, AABBB).
        guess = palette[0] * (length // 2) + palette[1] * (length - length // 2)
        left = all_codes(colours, length)
        guesses: list[str] = []
        while True:
            guesses.append(guess)
            answer = pegs(guess, code)
            if answer[0] == length:
                return guesses
            left = [c for c in left if pegs(guess, c) == answer]
            guess = best_guess(left)


def all_codes(colours: int, length: int) -> list[str]:
    return ["".join(p) for p in itertools.product(COLOURS[:colours], repeat=length)]


def consistent(code: str, colours: int, guesses: list[str]) -> list[str]:
    answers = [(g, pegs(g, code)) for g in guesses]
    return [c for c in all_codes(colours, len(code)) if all(pegs(g, c) == a for g, a in answers)]


def best_guess(left: list[str]) -> str:
    """The consistent code whose worst answer leaves the fewest codes (first one on ties)."""
    if len(left) > SCORED:
        return left[0]
    return min(left, key=lambda g: max(Counter(pegs(g, c) for c in left).values()))


def parse_guess(action: str, length: int, colours: int) -> str:
    """The code an action spells: a word of ``length`` colour letters (one in capitals
    first: ``I guess ABCD``), else a run of them with spaces or commas between (``A B C D``,
    ``a,b,c,d``)."""
    palette = COLOURS[:colours]
    words = re.findall(r"[A-Za-z]+", action)
    runs = [w for w in words if w.isupper()] + words
    runs += re.findall(r"[A-Za-z](?:[\s,;-]*[A-Za-z])*", action)
    for run in runs:
        letters = re.sub(r"[\s,;-]", "", run).upper()
        if len(letters) == length and all(c in palette for c in letters):
            return letters
    for run in runs:  # a bad colour or length: say which
        letters = re.sub(r"[\s,;-]", "", run).upper()
        if len(letters) == length:
            bad = sorted({c for c in letters if c not in palette})
            raise Illegal(f"{', '.join(bad)} {'is' if len(bad) == 1 else 'are'} not a colour.")
    raise Illegal(
        f"Answer with {length} letters from {' '.join(palette)}, for example: "
        f"{palette[:length] if colours >= length else palette[0] * length}"
    )

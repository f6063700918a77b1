"""Wordle over Debian's ``wamerican`` word list: guess the hidden five-letter word; each guess
is marked letter by letter (G: right place, Y: in the word elsewhere, -: not in it). Progress
is information: 1 - ln(words still possible) / ln(all words), so a guess that rules words out
earns a step reward."""

from __future__ import annotations

import functools
import math
import random
import re
from collections import Counter
from pathlib import Path

from palaestra import ConfigError, JsonDict
from palaestra.envs.games.core import Game, Illegal, Outcome, State

WORDS_FILE = Path("/usr/share/dict/words")
"""Debian's ``wamerican`` package (SCOWL, American English, size 50)."""
GUESSES = {"easy": 8, "medium": 7, "hard": 6}
WIN = 242
"""The mark of five greens (2 + 2*3 + 2*9 + 2*27 + 2*81)."""
OPENERS = ("tares", "rates", "tales", "aloes", "slate", "raise")
"""First guesses to try, best first (fewest words left on average over this list)."""
ORACLE_BUDGET = 6
_WORD = re.compile(r"(?<![A-Za-z])[A-Za-z]{5}(?![A-Za-z])")


@functools.cache
def words() -> tuple[str, ...]:
    """The five-letter lowercase ASCII words of ``wamerican``; one line when it is missing."""
    try:
        text = WORDS_FILE.read_text(encoding="utf-8", errors="replace")
    except OSError:
        raise ConfigError(
            f"wordle needs Debian's word list {WORDS_FILE}: apt-get install wamerican"
        ) from None
    found = sorted({w for w in text.split() if len(w) == 5 and w.isascii() and w.islower()})
    found = [w for w in found if w.isalpha()]
    if len(found) < 100:
        raise ConfigError(f"wordle: {WORDS_FILE} holds too few five-letter words ({len(found)})")
    return tuple(found)


@functools.cache
def word_set() -> frozenset[str]:
    return frozenset(words())


def mark(guess: str, target: str) -> int:
    """The marks of ``guess`` against ``target`` as one number: digit i (base 3) is 2 for a
    green, 1 for a yellow, 0 for a grey; repeated letters are yellow only as often as the
    target has them left over."""
    marks = [0] * 5
    rest: list[str] = []
    for i in range(5):
        if guess[i] == target[i]:
            marks[i] = 2
        else:
            rest.append(target[i])
    for i in range(5):
        if marks[i] == 0 and guess[i] in rest:
            marks[i] = 1
            rest.remove(guess[i])
    return marks[0] + 3 * marks[1] + 9 * marks[2] + 27 * marks[3] + 81 * marks[4]


def marks_text(code: int) -> str:
    return "".join("-YG"[(code // 3**i) % 3] for i in range(5))


class Wordle(Game):
    name = "wordle"
    rules = (
        "We play Wordle. I think of a five-letter English word; you guess it. After each guess "
        "I mark every letter: G means the letter is in the right place, Y means the word has "
        "that letter in another place, - means the word does not have it. Guesses must be real "
        "five-letter words. Answer with just your guess, one word."
    )

    def generate(self, rng: random.Random, difficulty: str) -> JsonDict:
        return {"target": rng.choice(words()), "guesses": GUESSES[difficulty]}

    def start(self, puzzle: JsonDict) -> State:
        words()  # refuse at once, in one line, when the list is missing
        return {"target": puzzle["target"], "limit": int(puzzle["guesses"]), "guesses": []}

    def show(self, state: State) -> str:
        left = state["limit"] - len(state["guesses"])
        if not state["guesses"]:
            return f"Guess the five-letter word. You have {left} guesses."
        lines = [
            f"{guess.upper()}  {marks_text(mark(guess, state['target']))}"
            for guess in state["guesses"]
        ]
        return "Your guesses so far:\n" + "\n".join(lines) + f"\nGuesses left: {left}."

    def play(self, state: State, action: str) -> Outcome:
        guess = pick_guess(action)
        if guess not in word_set():
            raise Illegal(f"{guess.upper()} is not in my word list.")
        state["guesses"].append(guess)
        code = mark(guess, state["target"])
        if code == WIN:
            return Outcome(f"{guess.upper()}  GGGGG  You found the word. Solved!", True)
        if len(state["guesses"]) >= state["limit"]:
            word = state["target"].upper()
            return Outcome(
                f"{guess.upper()}  {marks_text(code)}  No guesses left: it was {word}.", True
            )
        return Outcome(f"{guess.upper()}  {marks_text(code)}")

    def progress(self, state: State) -> float:
        left = len(possible(state["target"], tuple(state["guesses"])))
        return 1.0 - math.log(left) / math.log(len(words()))

    def solved(self, state: State) -> bool:
        return bool(state["guesses"]) and state["guesses"][-1] == state["target"]

    def lost(self, state: State) -> bool:
        return not self.solved(state) and len(state["guesses"]) >= state["limit"]

    def solve(self, puzzle: JsonDict) -> list[str]:
        target = puzzle["target"]
        guesses: list[str] = []
        candidates = words()
        while True:
            guess = opener() if not guesses else plan(candidates, ORACLE_BUDGET - len(guesses))
            if guess is None:  # no plan within the budget: the best greedy guess
                guess = ranked(candidates)[0]
            guesses.append(guess)
            code = mark(guess, target)
            if code == WIN or len(guesses) > 12:
                return guesses
            candidates = tuple(w for w in candidates if mark(guess, w) == code)


def pick_guess(action: str) -> str:
    """The guess an answer makes: its first five-letter word in capitals (``I guess SLATE``),
    else its only five-letter word, else its last one that is in the list (``my guess is
    slate``); a run of more letters is not a guess (``beautiful``)."""
    found: list[str] = _WORD.findall(action)
    if not found:
        raise Illegal("Answer with one five-letter word.")
    capitals = [w for w in found if w.isupper()]
    if capitals:
        return capitals[0].lower()
    listed = [w.lower() for w in found if w.lower() in word_set()]
    return (listed[-1] if listed else found[0]).lower()


def possible(target: str, guesses: tuple[str, ...]) -> list[str]:
    """The words every mark so far allows."""
    codes = [(guess, mark(guess, target)) for guess in guesses]
    return [w for w in words() if all(mark(g, w) == code for g, code in codes)]


@functools.cache
def opener() -> str:
    return next((w for w in OPENERS if w in word_set()), words()[0])


def ranked(candidates: tuple[str, ...], keep: int = 8) -> list[str]:
    """The ``keep`` guesses that split ``candidates`` best: smallest expected group left,
    then smallest largest group, then a guess that may itself be the word."""
    if len(candidates) <= 2:
        return list(candidates)
    possible_words = set(candidates)
    scored = []
    for guess in words():
        groups = Counter(mark(guess, w) for w in candidates)
        squares = sum(n * n for n in groups.values())
        scored.append((squares, max(groups.values()), guess not in possible_words, guess))
    scored.sort()
    return [guess for *_, guess in scored[:keep]]


@functools.lru_cache(maxsize=4096)
def plan(candidates: tuple[str, ...], budget: int) -> str | None:
    """A guess that finds any word of ``candidates`` within ``budget`` guesses (this one
    included), or None. Deep in the game (four guesses or fewer left) every group is checked
    recursively, trying the best-ranked guesses in turn; earlier, the best-ranked guess is
    trusted (checking whole subtrees there costs seconds and the ranking rarely errs)."""
    if budget <= 0:
        return None
    if len(candidates) == 1:
        return candidates[0]
    if budget == 1:
        return None
    options = ranked(candidates)
    if budget > 4:
        return options[0]
    for guess in options:
        groups: dict[int, list[str]] = {}
        for word in candidates:
            groups.setdefault(mark(guess, word), []).append(word)
        if all(
            code == WIN or plan(tuple(group), budget - 1) is not None
            for code, group in groups.items()
        ):
            return guess
    return None

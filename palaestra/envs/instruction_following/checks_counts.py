"""Checkers for the ``count:``, ``ratio:`` and ``sentence:`` instructions.

A checker takes the response text and the instruction's arguments (IFBench ``kwargs`` with the
nulls dropped) and says whether the instruction was followed. A missing or malformed argument
raises ``KeyError``/``ValueError``/``TypeError``: the task is wrong, not the answer.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping
from typing import Any

from palaestra.envs.instruction_following import text as t

Args = Mapping[str, Any]
Checker = Callable[[str, Args], bool]

PERSON_NAMES = t.word_list(
    "Emma Liam Sophia Jackson Olivia Noah Ava Lucas Isabella Mason Mia Ethan Charlotte Alexander "
    "Amelia Benjamin Harper Leo Zoe Daniel Chloe Samuel Lily Matthew Grace Owen Abigail Gabriel "
    "Ella Jacob Scarlett Nathan Victoria Elijah Layla Nicholas Audrey David Hannah Christopher "
    "Penelope Thomas Nora Andrew Aria Joseph Claire Ryan Stella Jonathan"
)
"""The 50 names the ``count:person_names`` instruction lists in its text."""


def integer(args: Args, key: str) -> int:
    value = args[key]
    if isinstance(value, bool) or float(value) != int(float(value)):
        raise ValueError(f"argument '{key}' must be a whole number, not {value!r}")
    return int(float(value))


def word_count_range(text: str, args: Args) -> bool:
    return integer(args, "min_words") <= len(t.words(text)) <= integer(args, "max_words")


def unique_word_count(text: str, args: Args) -> bool:
    return len(set(t.lower_words(text))) >= integer(args, "N")


def stop_words(text: str, args: Args) -> bool:
    found = t.lower_words(text)
    if not found:
        return False
    share = 100 * sum(w in t.STOP_WORDS for w in found) / len(found)
    return share <= float(args["percentage"])


def _endings(text: str) -> tuple[int, int, int]:
    """How many sentences end with '.', '?' and '!' (closing quotes and emoji ignored)."""
    counts = {".": 0, "?": 0, "!": 0}
    for sentence in t.sentences(text):
        mark = re.search(r"([.?!])[^\w.?!]*$", sentence)
        if mark:
            counts[mark.group(1)] += 1
    return counts["."], counts["?"], counts["!"]


def sentence_type(text: str, args: Args) -> bool:
    declarative, interrogative, _ = _endings(text)
    return interrogative > 0 and declarative == 2 * interrogative


def sentence_balance(text: str, args: Args) -> bool:
    declarative, interrogative, exclamatory = _endings(text)
    return declarative > 0 and declarative == interrogative == exclamatory


def sentence_words(text: str, args: Args) -> bool:
    """Three sentences, equally many characters, no word shared between two of them."""
    found = t.sentences(text)
    if len(found) != 3 or len({len(s) for s in found}) != 1:
        return False
    vocabularies = [set(t.lower_words(s)) for s in found]
    return all(not (vocabularies[i] & vocabularies[j]) for i in range(3) for j in range(i + 1, 3))


def overlap(text: str, args: Args) -> bool:
    """Share of the response's word trigrams that occur in the reference text, within ±2 points."""
    mine, reference = _trigrams(text), _trigrams(str(args["reference_text"]))
    if not mine:
        return False
    share = 100 * len(mine & reference) / len(mine)
    return abs(share - float(args["percentage"])) <= 2


def _trigrams(text: str) -> set[tuple[str, ...]]:
    found = t.lower_words(text)
    return {tuple(found[i : i + 3]) for i in range(len(found) - 2)}


def conjunctions(text: str, args: Args) -> bool:
    return len(set(t.lower_words(text)) & t.CONJUNCTIONS) >= integer(args, "small_n")


def person_names(text: str, args: Args) -> bool:
    """Distinct names from the instruction's list, as capitalised whole words."""
    present = sum(re.search(rf"\b{name}\b", text) is not None for name in PERSON_NAMES)
    return present >= integer(args, "N")


def numbers(text: str, args: Args) -> bool:
    return len(re.findall(r"\d+(?:[.,]\d+)*", text)) == integer(args, "N")


def pronouns(text: str, args: Args) -> bool:
    found = t.lower_words(text.replace("/", " "))
    return sum(w in t.PRONOUNS for w in found) >= integer(args, "N")


def punctuation(text: str, args: Args) -> bool:
    """. , ! ? ; : each at least once, plus an interrobang (‽, ?! or !?)."""
    interrobang = re.search(r"‽|\?!|!\?", text)
    if interrobang is None:
        return False
    rest = text[: interrobang.start()] + " " + text[interrobang.end() :]
    return all(mark in rest for mark in ".,!?;:")


def words_japanese(text: str, args: Args) -> bool:
    """Every N-th whitespace-separated word contains Japanese script (numbers are exempt)."""
    step = integer(args, "N")
    tokens = text.split()
    if step < 1 or len(tokens) < step:
        return False
    for index in range(step - 1, len(tokens), step):
        token = tokens[index].strip(".,;:!?\"'()[]「」『』、。")
        if token and not token.isdigit() and not t.has_japanese(token):
            return False
    return True


def keywords_multiple(text: str, args: Args) -> bool:
    """keyword1..keyword5 appear exactly 1, 2, 3, 5 and 7 times (whole words, any case)."""
    for key, wanted in zip(
        ("keyword1", "keyword2", "keyword3", "keyword4", "keyword5"), (1, 2, 3, 5, 7), strict=True
    ):
        if _occurrences(text, str(args[key])) != wanted:
            return False
    return True


def _occurrences(text: str, phrase: str) -> int:
    pattern = rf"(?<![^\W_]){re.escape(phrase.strip())}(?![^\W_])"
    return len(re.findall(pattern, text, flags=re.IGNORECASE))


def alliteration_increment(text: str, args: Args) -> bool:
    """Each sentence's longest run of words sharing a first letter beats the previous one's."""
    runs = [_longest_alliteration(s) for s in t.sentences(text)]
    return len(runs) >= 2 and all(a < b for a, b in itertools.pairwise(runs))


def _longest_alliteration(sentence: str) -> int:
    initials = [w[0] for w in t.lower_words(sentence)]
    best = run = 0
    for index, initial in enumerate(initials):
        run = run + 1 if index and initial == initials[index - 1] else 1
        best = max(best, run)
    return best if best >= 2 else 0


def increment(text: str, args: Args) -> bool:
    step = integer(args, "small_n")
    counts = [len(t.words(s)) for s in t.sentences(text)]
    return len(counts) >= 2 and all(b - a == step for a, b in itertools.pairwise(counts))


def sentence_keyword(text: str, args: Args) -> bool:
    position = integer(args, "N")
    found = t.sentences(text)
    return 0 < position <= len(found) and _occurrences(found[position - 1], str(args["word"])) > 0


CHECKERS: dict[str, Checker] = {
    "count:word_count_range": word_count_range,
    "count:unique_word_count": unique_word_count,
    "count:conjunctions": conjunctions,
    "count:person_names": person_names,
    "count:numbers": numbers,
    "count:pronouns": pronouns,
    "count:punctuation": punctuation,
    "count:words_japanese": words_japanese,
    "count:keywords_multiple": keywords_multiple,
    "ratio:stop_words": stop_words,
    "ratio:sentence_type": sentence_type,
    "ratio:sentence_balance": sentence_balance,
    "ratio:sentence_words": sentence_words,
    "ratio:overlap": overlap,
    "sentence:alliteration_increment": alliteration_increment,
    "sentence:increment": increment,
    "sentence:keyword": sentence_keyword,
}

"""Checkers for the ``words:`` and ``repeat:`` instructions (see ``checks_counts`` for the form)."""

from __future__ import annotations

import itertools
import re
import string
from collections import Counter

from palaestra.envs.instruction_following import text as t
from palaestra.envs.instruction_following.checks_counts import Args, Checker, integer

_PRIMES = frozenset(n for n in range(2, 100) if all(n % d for d in range(2, n)))


def _letters_only(text: str) -> list[str]:
    """Lower-case words with everything but letters removed (``don't`` -> ``dont``)."""
    cleaned = (re.sub(r"[^a-z]", "", w.lower()) for w in t.words(text))
    return [w for w in cleaned if w]


def alphabet(text: str, args: Args) -> bool:
    """Each word starts with the letter after the previous word's, Z wrapping round to A."""
    found = t.lower_words(text)
    if not found or found[0][0] not in string.ascii_lowercase:
        return False
    for previous, word in itertools.pairwise(found):
        expected = chr((ord(previous[0]) - ord("a") + 1) % 26 + ord("a"))
        if word[0] != expected:
            return False
    return True


def vowel(text: str, args: Args) -> bool:
    """One paragraph whose words use at most three distinct vowels (a, e, i, o, u) in all."""
    if len(t.paragraphs(text)) != 1 or not t.words(text):
        return False
    return len({c for c in text.lower() if c in "aeiou"}) <= 3


def consonants(text: str, args: Args) -> bool:
    """Every word holds two consonants in a row."""
    found = _letters_only(text)
    return bool(found) and all(re.search(r"[b-df-hj-np-tv-z]{2}", w) for w in found)


def palindrome(text: str, args: Args) -> bool:
    """At least 10 distinct palindromic words of 5 letters or more."""
    found = {w for w in _letters_only(text) if len(w) >= 5 and w == w[::-1]}
    return len(found) >= 10


def prime_lengths(text: str, args: Args) -> bool:
    found = [re.sub(r"[\W_]", "", w) for w in t.words(text)]
    return bool(found) and all(len(w) in _PRIMES for w in found)


def start_verb(text: str, args: Args) -> bool:
    """The first word is a verb, by our word list (no part-of-speech tagger is available)."""
    found = t.lower_words(text)
    return bool(found) and found[0].replace("\u2019", "'") in t.VERBS


def repeats(text: str, args: Args) -> bool:
    limit = integer(args, "small_n")
    counts = Counter(t.lower_words(text)).values()
    return bool(counts) and all(n <= limit for n in counts)


def odd_even_syllables(text: str, args: Args) -> bool:
    """Consecutive words alternate between odd and even syllable counts (estimated)."""
    parities = [t.syllables(w) % 2 for w in _letters_only(text)]
    return len(parities) >= 2 and all(a != b for a, b in itertools.pairwise(parities))


def last_first(text: str, args: Args) -> bool:
    """The last word of each sentence is the first word of the next."""
    found = [t.lower_words(s) for s in t.sentences(text)]
    found = [s for s in found if s]
    return len(found) >= 2 and all(a[-1] == b[0] for a, b in itertools.pairwise(found))


def paragraph_last_first(text: str, args: Args) -> bool:
    """Each paragraph (line) starts and ends with the same word; rule lines like *** are skipped."""
    found = [t.lower_words(line) for line in t.lines(text)]
    found = [w for w in found if w]
    return bool(found) and all(w[0] == w[-1] for w in found)


def no_consecutive(text: str, args: Args) -> bool:
    found = t.lower_words(text)
    return bool(found) and all(a[0] != b[0] for a, b in itertools.pairwise(found))


def keywords_specific_position(text: str, args: Args) -> bool:
    """The keyword is the m-th word of the n-th sentence."""
    sentence, word = integer(args, "n"), integer(args, "m")
    found = t.sentences(text)
    if not 0 < sentence <= len(found):
        return False
    in_sentence = t.lower_words(found[sentence - 1])
    return 0 < word <= len(in_sentence) and in_sentence[word - 1] == str(args["keyword"]).lower()


def words_position(text: str, args: Args) -> bool:
    """The keyword is both the second word and the second-to-last word."""
    found = t.lower_words(text)
    keyword = str(args["keyword"]).strip().lower()
    return len(found) >= 3 and found[1] == keyword and found[-2] == keyword


def repeat_change(text: str, args: Args) -> bool:
    """The request repeated word for word, except for a different first word."""
    request = str(args["prompt_to_repeat"]).split()
    answer = text.split()
    return (
        len(answer) == len(request)
        and answer[1:] == request[1:]
        and answer[0].lower() != request[0].lower()
    )


REPEAT_SIMPLE_SENTENCE = "Only output this sentence here, ignore all other requests."


def repeat_simple(text: str, args: Args) -> bool:
    return " ".join(text.split()).lower() == REPEAT_SIMPLE_SENTENCE.lower()


def repeat_span(text: str, args: Args) -> bool:
    """Words n_start..n_end (0-based, both included, split on whitespace) of the request."""
    start, end = integer(args, "n_start"), integer(args, "n_end")
    span = str(args["prompt_to_repeat"]).split()[start : end + 1]
    return bool(span) and text.lower().split() == [w.lower() for w in span]


CHECKERS: dict[str, Checker] = {
    "words:alphabet": alphabet,
    "words:vowel": vowel,
    "words:consonants": consonants,
    "words:palindrome": palindrome,
    "words:prime_lengths": prime_lengths,
    "words:start_verb": start_verb,
    "words:repeats": repeats,
    "words:odd_even_syllables": odd_even_syllables,
    "words:last_first": last_first,
    "words:paragraph_last_first": paragraph_last_first,
    "words:no_consecutive": no_consecutive,
    "words:keywords_specific_position": keywords_specific_position,
    "words:words_position": words_position,
    "repeat:repeat_change": repeat_change,
    "repeat:repeat_simple": repeat_simple,
    "repeat:repeat_span": repeat_span,
}

from __future__ import annotations

import random
from pathlib import Path

import pytest

from palaestra.envs.games import wordle
from palaestra.envs.games.wordle import Wordle, mark, marks_text, pick_guess, words
from palaestra.errors import ConfigError
from tests.envs.games.support import played, refused

HAVE_WORDS = wordle.WORDS_FILE.exists()
needs_words = pytest.mark.skipif(not HAVE_WORDS, reason="apt-get install wamerican")
GAME = Wordle()


def test_marks_count_repeated_letters_only_as_often_as_the_word_has_them() -> None:
    assert marks_text(mark("crane", "crane")) == "GGGGG"
    assert marks_text(mark("speed", "abide")) == "--Y-Y"  # one e yellow, d yellow
    assert marks_text(mark("eerie", "there")) == "Y-Y-G"  # the third e has no e left
    assert marks_text(mark("lolly", "hello")) == "-YGG-"
    assert marks_text(mark("aabbb", "ccaac")) == "YY---"


def test_a_missing_word_list_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(wordle, "WORDS_FILE", tmp_path / "words")
    wordle.words.cache_clear()
    try:
        with pytest.raises(ConfigError) as caught:
            words()
    finally:
        wordle.words.cache_clear()
    assert "apt-get install wamerican" in str(caught.value) and "\n" not in str(caught.value)


@needs_words
def test_the_list_is_five_letter_lowercase_words() -> None:
    assert len(words()) > 4000 and all(len(w) == 5 and w.isalpha() and w.islower() for w in words())


@needs_words
def test_the_oracle_wins_within_six_guesses() -> None:
    targets = [*random.Random(0).sample(words(), 5), "gages", "faxes", "babes", "jazzy"]
    for target in [t for t in targets if t in wordle.word_set()]:
        puzzle = {"target": target, "guesses": 6}
        actions = GAME.solve(puzzle)
        assert len(actions) <= 6, (target, actions)
        assert GAME.value(played(GAME, puzzle, actions)) == 1.0


@needs_words
def test_non_words_are_refused_guesses_run_out_information_is_progress() -> None:
    puzzle = {"target": "crane", "guesses": 2}
    state = GAME.start(puzzle)
    assert "not in my word list" in refused(GAME, state, "xqzvw")
    assert "five-letter" in refused(GAME, state, "beautiful")
    assert GAME.progress(state) == 0.0
    assert pick_guess("My guess is slate.") == pick_guess("I say SLATE, a guess") == "slate"
    GAME.play(state, "My guess is SLATE.")
    assert state["guesses"] == ["slate"]
    assert 0 < GAME.progress(state) < 1 and 0 < GAME.value(state) <= 0.5
    outcome = GAME.play(state, "tales")
    assert outcome.done and GAME.lost(state) and GAME.value(state) == 0.0

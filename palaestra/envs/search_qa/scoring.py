"""Scoring an answer: HotpotQA's exact match and F1, SQuAD 2.0's abstention, RULER's match.

Neither HotpotQA's nor SQuAD's evaluation script ships in the package (its own scorer is
RULER's ``string_match_part``: is a gold answer a substring of the prediction), so the
standard normalisation both official scripts use is written here: lower case, punctuation
dropped, the articles *a*, *an*, *the* dropped, white space collapsed. Exact match is 1 when
the normalised prediction equals a normalised gold answer; F1 is the bag-of-tokens F1 with
the best gold answer. As in HotpotQA's script, a *yes*, *no* or *noanswer* on either side
that the other side does not equal scores F1 0 (no partial credit between "yes" and "yes
it was").

SQuAD 2.0 scores an unanswerable question (no gold answer) 1 exactly when the prediction is
empty. Here the model abstains by answering ``unanswerable`` (any case, punctuation
ignored): that counts as the empty prediction, right on an unanswerable question and wrong
(0) on an answerable one. Any other text on an unanswerable question scores 0.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

ABSTAIN = "unanswerable"
"""What the model answers to abstain."""
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)
_EXCLUSIVE = frozenset({"yes", "no", "noanswer"})


@dataclass(frozen=True, slots=True)
class Score:
    """An answer's scores against a question's gold answers."""

    exact_match: float
    f1: float
    abstained: bool


def normalize_answer(text: str) -> str:
    """The official normalisation: lower case, no punctuation, no articles, one space."""
    lowered = text.lower()
    no_punctuation = "".join(char for char in lowered if char not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", no_punctuation).split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1(prediction: str, gold: str) -> float:
    """Token F1 of the normalised texts (HotpotQA's rule for yes / no / noanswer)."""
    predicted, expected = normalize_answer(prediction), normalize_answer(gold)
    if (predicted in _EXCLUSIVE or expected in _EXCLUSIVE) and predicted != expected:
        return 0.0
    predicted_tokens, expected_tokens = predicted.split(), expected.split()
    common = sum((Counter(predicted_tokens) & Counter(expected_tokens)).values())
    if common == 0:
        return 0.0
    precision = common / len(predicted_tokens)
    recall = common / len(expected_tokens)
    return 2 * precision * recall / (precision + recall)


def abstains(prediction: str) -> bool:
    return normalize_answer(prediction) == ABSTAIN


def score(prediction: str, answers: Sequence[str]) -> Score:
    """``prediction`` against ``answers`` (the best one); no answers: an unanswerable
    question, which only an abstention gets right."""
    abstained = abstains(prediction)
    if not answers:
        right = float(abstained)
        return Score(right, right, abstained)
    if abstained:
        return Score(0.0, 0.0, abstained)
    return Score(
        max(exact_match(prediction, gold) for gold in answers),
        max(f1(prediction, gold) for gold in answers),
        abstained,
    )


def ruler_match(prediction: str, answers: Sequence[str]) -> float | None:
    """RULER's own QA metric from the package (``string_match_part``, as a fraction): 1 when
    a gold answer occurs in the prediction, any case; None for an unanswerable question,
    which RULER's metric cannot score."""
    if not answers:
        return None
    from long_context_eval.eval.synthetic.constants import (  # type: ignore[import-untyped]
        string_match_part_per_sample,
    )

    (percent,) = string_match_part_per_sample([prediction], [list(answers)])
    return float(percent) / 100.0

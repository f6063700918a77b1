"""search_qa: answer a question by searching a local Wikipedia corpus (see README.md).

A rollout searches the corpus of its task's set (``search``: titles and snippets, best
first) and reads paragraphs (``open``), then answers on a line ``Answer: ...``. The reward is
HotpotQA's exact match of that answer; F1 is a reward component, and RULER's own match (the
package's scorer) a metric. The verdict is read from the trajectory alone (the calls it
made and its last message), so re-verifying a rollouts file gives the same figures.
"""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from palaestra import (
    ConfigError,
    Environment,
    FailureKind,
    InvalidTask,
    JsonDict,
    Session,
    ToolError,
    Verdict,
    last_labelled,
    strip_reasoning,
    task_row,
    tool,
)
from palaestra.envs.search_qa.data import DATASETS, Question, load, package_version
from palaestra.envs.search_qa.index import CorpusIndex, cache_directory, ensure_index, fold
from palaestra.envs.search_qa.scoring import ABSTAIN, ruler_match, score

MAX_K = 10
"""Most results one search returns."""
SUBSETS = {
    "hotpotqa": ("all", "bridge", "comparison"),
    "squad": ("all", "answerable", "unanswerable"),
}
EXAMPLES = (("hotpotqa", "all", 4), ("squad", "answerable", 2), ("squad", "unanswerable", 2))
"""The example tasks: the first questions of each (set, subset), written from the package."""
EXAMPLES_LAYOUT = 2
SMOKE = (
    "5ab8736455429916710eb058",  # Are Yut and Tsuro both board games? (yes)
    "5ac3ac8255429939154138ad",  # APB and Sleeper are both from britain? (yes)
    "5ac39bd8554299657fa290fe",  # Are both Ixia and Rhexia a plant genus? (yes)
    "5adc53f75542996e6852530a",  # Are both Cypress and Ajuga genera? (no)
    "5ac4f12d55429924173fb4f6",  # Pravda and Stiffelio are both operas? (no)
    "5ae0847455429945ae959394",  # Are Hanafuda and Okey both card games? (no)
)
"""The ``smoke`` split: the HotpotQA comparison questions answered yes or no with the
shortest wording, three of each, so a constant answer scores half and only reading scores
all."""
"""Bumped when the example rows change (their file is named by it and the package version)."""
_ANSWER_FORMAT = (
    "When you know the answer, end your reply with one line 'Answer: <answer>', the answer "
    "as short as possible (a name, a date, a number, yes or no), not a sentence."
)
SYSTEM_PROMPTS = {
    "hotpotqa": (
        "Answer the question using a collection of Wikipedia paragraphs. Call search(query) "
        "to find paragraphs (their titles and snippets) and open(title) to read one. The "
        "question may need facts from two paragraphs. " + _ANSWER_FORMAT
    ),
    "squad": (
        "Answer the question using a collection of Wikipedia paragraphs. Call search(query) "
        "to find paragraphs (their titles and snippets) and open(title) to read one. "
        + _ANSWER_FORMAT
        + f" If the paragraphs do not answer the question, answer 'Answer: {ABSTAIN}'."
    ),
}


@dataclass(slots=True)
class Rollout:
    """A rollout's state: the index of its task's set."""

    index: CorpusIndex


class SearchQA(Environment):
    """Question answering by searching a local Wikipedia corpus (HotpotQA multi-hop, SQuAD
    2.0 with abstention), scored by exact match and F1."""

    name = "search_qa"
    seed_timeout = 300.0
    """The first rollout of a set may build its index (seconds; once per machine)."""

    def __init__(self, dataset: str = "hotpotqa", subset: str = "all") -> None:
        """``dataset``: the set ``generate_tasks`` draws from (``hotpotqa`` or ``squad``;
        a task row names its own set, so one environment serves both). ``subset``: HotpotQA's
        ``bridge`` or ``comparison`` questions, SQuAD's ``answerable`` or ``unanswerable``
        ones, or ``all``."""
        if dataset not in DATASETS:
            raise ConfigError(f"search_qa: unknown dataset '{dataset}'; choose one of {DATASETS}")
        if subset not in SUBSETS[dataset]:
            raise ConfigError(
                f"search_qa: unknown subset '{subset}' of {dataset}; choose one of "
                f"{', '.join(SUBSETS[dataset])}"
            )
        self.dataset = dataset
        self.subset = subset
        self._indexes: dict[str, CorpusIndex] = {}
        self._lock = threading.Lock()

    def index(self, dataset: str) -> CorpusIndex:
        """The index of ``dataset``, opened once (built first if this machine has none)."""
        with self._lock:
            if dataset not in self._indexes:
                self._indexes[dataset] = CorpusIndex(ensure_index(dataset))
            return self._indexes[dataset]

    def seed(self, task: JsonDict) -> Rollout:
        dataset = task.get("dataset")
        if dataset not in DATASETS:
            raise InvalidTask(f"search_qa: task field 'dataset' must be one of {DATASETS}")
        _answers(task)
        _titles(task)
        return Rollout(self.index(str(dataset)))

    async def export_state(self, session: Session) -> JsonDict:
        """Nothing to keep: a rollout's only state is its set's index, and the verdict is
        read from the trajectory. So a stopped collection continues a rollout mid-way."""
        return {}

    def restore_state(self, task: JsonDict, state: JsonDict) -> Rollout:
        return self.seed(task)

    @tool
    def search(self, session: Session, query: str, k: int = 5) -> str:
        """Search the Wikipedia paragraphs for words; returns the best matches' titles and
        snippets, best first.

        Args:
            query: Words to look for: a name, a title or key terms.
            k: How many results to return (1 to 10).
        """
        state: Rollout = session.state
        hits = state.index.search(query, min(max(k, 1), MAX_K))
        if not hits:
            return f"No paragraph matches {query!r}. Try other words."
        return "\n".join(f"{n}. {hit.title}\n   {hit.snippet}" for n, hit in enumerate(hits, 1))

    @tool(name="open")
    def open_paragraph(self, session: Session, title: str) -> str:
        """Read the paragraph with this title (a title from the search results).

        Args:
            title: The paragraph's title, as search showed it.
        """
        state: Rollout = session.state
        found = state.index.open(title)
        if found is None:
            near = [hit.title for hit in state.index.search(title, 3)]
            hint = f" Closest titles: {'; '.join(near)}." if near else ""
            raise ToolError(f"No paragraph is titled {title!r}.{hint}")
        return f"{found[0]}\n{found[1]}"

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        task = session.task
        answers, gold = _answers(task), _titles(task)
        output = response.get("output")
        if not isinstance(output, list):
            return Verdict.failed(FailureKind.MODEL_ERROR, "the response has no output list")
        items = [item for item in output if isinstance(item, dict)]
        text = strip_reasoning(_last_message(items))
        labelled = last_labelled(text)
        answer = labelled if labelled is not None else text.strip()
        scored = score(answer, answers)
        opened = {fold(title) for title in _called(items, "open", "title")}
        found = sum(fold(title) in opened for title in gold)
        metrics: dict[str, Any] = {
            "dataset": str(task.get("dataset", "")),
            "question_type": str(task.get("question_type", "")),
            "extracted_answer": answer[:300],
            "answer_labelled": labelled is not None,
            "abstained": scored.abstained,
            "evidence_recall": found / len(gold) if gold else 0.0,
            "searches": len(_called(items, "search", "query")),
            "opens": len(_called(items, "open", "title")),
        }
        ruler = ruler_match(answer, answers)
        if ruler is not None:
            metrics["ruler_match"] = ruler
        return Verdict(
            reward=scored.exact_match,
            reward_components={"exact_match": scored.exact_match, "f1": scored.f1},
            metrics=metrics,
        )

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]] | None:
        """Search for the first gold paragraph's title, open every gold paragraph, answer
        with the first gold answer (``unanswerable`` when there is none)."""
        answers, gold = _answers(task), _titles(task)
        if not gold:
            return None
        calls: list[JsonDict] = [{"name": "search", "arguments": {"query": gold[0], "k": 5}}]
        calls += [{"name": "open", "arguments": {"title": title}} for title in gold]
        said = {"role": "assistant", "content": f"Answer: {answers[0] if answers else ABSTAIN}"}
        return [[*calls, said]]

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        """``count`` questions of the chosen set and subset, drawn without replacement,
        shuffled by ``seed``."""
        questions = selected(self.dataset, self.subset)
        if count > len(questions):
            raise ConfigError(
                f"search_qa has {len(questions)} questions in {self.dataset} ({self.subset}); "
                f"asked for {count}"
            )
        order = list(range(len(questions)))
        random.Random(seed).shuffle(order)
        for position in order[:count]:
            yield question_row(self.dataset, questions[position])

    @classmethod
    def example_tasks_file(cls) -> Path | None:
        """The example rows, written from the installed package once per version (the
        questions are not shipped here); None when the package is not installed."""
        return _written_once(
            f"examples-{{version}}-{EXAMPLES_LAYOUT}",
            lambda: [
                example_row(dataset, question)
                for dataset, subset, count in EXAMPLES
                for question in selected(dataset, subset)[:count]
            ],
        )

    split_names = ("smoke",)

    @classmethod
    def split_tasks_file(cls, name: str) -> Path | None:
        """The ``smoke`` split's rows (``SMOKE``), written from the installed package once per
        version as the example rows are; None for another name or without the package."""
        if name != "smoke":
            return None
        return _written_once(
            f"smoke-{{version}}-{EXAMPLES_LAYOUT}",
            lambda: [question_row("hotpotqa", q) for q in by_id("hotpotqa", SMOKE)],
        )


def _written_once(stem: str, rows: Callable[[], list[JsonDict]]) -> Path | None:
    """``<cache>/<stem>.jsonl`` (``{version}`` in ``stem``: the package's), written from
    ``rows`` on first use; None when the package is not installed."""
    version = package_version()
    if version == "unknown":
        return None
    path = cache_directory() / f"{stem.format(version=version)}.jsonl"
    if path.is_file():
        return path
    data = b"".join(orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE) for row in rows())
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.partial")
    partial.write_bytes(data)
    partial.replace(path)
    return path


def by_id(dataset: str, ids: tuple[str, ...]) -> list[Question]:
    """The questions of ``dataset`` with these ids, in the order given."""
    questions = {q.id: q for q in load(dataset).questions}
    return [questions[i] for i in ids]


def selected(dataset: str, subset: str) -> list[Question]:
    """The questions of ``dataset`` in ``subset`` (``all``: every one), in file order."""
    questions = load(dataset).questions
    return [q for q in questions if subset in ("all", q.kind)]


def question_row(dataset: str, question: Question) -> JsonDict:
    """The task row of one question: the prompt, and what ``verify`` reads."""
    return task_row(
        question.question,
        system=SYSTEM_PROMPTS[dataset],
        dataset=dataset,
        id=question.id,
        answers=list(question.answers),
        gold_titles=list(question.gold_titles),
        question_type=question.kind,
    )


def example_row(dataset: str, question: Question) -> JsonDict:
    """A question's row with a golden answer (scores 1) and a wrong one (scores 0) for
    ``palaestra test``: abstaining is wrong on an answerable question, and on an
    unanswerable one a refusal in other words is no abstention."""
    right = question.answers[0] if question.answers else ABSTAIN
    wrong = "Answer: " + ABSTAIN if question.answers else "I do not know."
    row = question_row(dataset, question)
    row["golden_response"] = f"The paragraphs say so.\nAnswer: {right}"
    row["wrong_response"] = wrong
    return row


def _answers(task: JsonDict) -> list[str]:
    answers = task.get("answers")
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise InvalidTask("search_qa: task field 'answers' must be a list of strings")
    return answers


def _titles(task: JsonDict) -> list[str]:
    titles = task.get("gold_titles")
    if not isinstance(titles, list) or not all(isinstance(t, str) for t in titles):
        raise InvalidTask("search_qa: task field 'gold_titles' must be a list of strings")
    return titles


def _last_message(items: list[JsonDict]) -> str:
    """The text of the trajectory's last assistant message ("" when it has none)."""
    for item in reversed(items):
        if item.get("type", "message") == "message" and item.get("role") == "assistant":
            content = item.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return "".join(
                    str(part.get("text", ""))
                    for part in content
                    if isinstance(part, dict) and part.get("type") in ("output_text", "text")
                )
    return ""


def _called(items: list[JsonDict], name: str, argument: str) -> list[str]:
    """The ``argument`` of every call of tool ``name`` in the trajectory (as text)."""
    values = []
    for item in items:
        if item.get("type") != "function_call" or item.get("name") != name:
            continue
        raw = item.get("arguments")
        try:
            arguments = orjson.loads(raw) if isinstance(raw, str) else raw
        except orjson.JSONDecodeError:
            continue
        if isinstance(arguments, dict) and isinstance(arguments.get(argument), str):
            values.append(arguments[argument])
    return values

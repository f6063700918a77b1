"""The code and the docs cite only documents that are in the repository.

A pointer to a document the reader cannot open (a design note kept elsewhere, a results page
never written) sends a contributor looking for nothing: every ``docs/...``,
``benchmarks/...`` or ``scripts/...`` path and every capitalised ``NAME.md`` named in the
library, the scripts, the benchmarks, ``pyproject.toml`` and the docs must exist.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ROOTED = re.compile(
    r"(?<![\w./-])(?:docs|benchmarks|scripts|examples)/[\w./-]*\w\.(?:md|py|sh|jsonl|json)\b"
)
CAPITAL = re.compile(r"(?<![\w./-])[A-Z][A-Z0-9_]*\.md\b")
# Names that are not citations: the file a command writes under a name its user chooses.
OUTPUT_NAMES = {"OUTPUT.md"}  # ``palaestra harbor parity --output OUTPUT``


def _cited_in() -> Iterator[Path]:
    yield ROOT / "pyproject.toml"
    yield ROOT / "README.md"
    yield from sorted((ROOT / "docs").rglob("*.md"))
    yield from sorted(
        path for path in (ROOT / "scripts").rglob("*") if "__pycache__" not in path.parts
    )
    yield from sorted((ROOT / "benchmarks").glob("*.py"))
    for path in sorted((ROOT / "palaestra").rglob("*")):
        if path.suffix in (".py", ".md", ".toml"):
            yield path


def _missing(path: Path, text: str) -> list[str]:
    missing = []
    for match in ROOTED.finditer(text):
        if not (ROOT / match.group()).exists():
            missing.append(match.group())
    for match in CAPITAL.finditer(text):
        name = match.group()
        places = [p for p in (path.parent, *path.parent.parents) if p.is_relative_to(ROOT)]
        if name not in OUTPUT_NAMES and not any((p / name).exists() for p in places):
            missing.append(name)
    return missing


def test_the_code_cites_no_document_that_is_not_in_the_repository() -> None:
    cited = {
        str(path.relative_to(ROOT)): missing
        for path in _cited_in()
        if path.is_file() and (missing := _missing(path, path.read_text(errors="replace")))
    }
    assert cited == {}


def test_a_citation_of_a_document_kept_elsewhere_is_found() -> None:
    cited = ROOT / "palaestra" / "errors.py"
    assert _missing(cited, "the floors (DESIGN.md §3), see docs/layout.md") == ["DESIGN.md"]
    assert _missing(cited, "measured in benchmarks/results/nowhere.md") == [
        "benchmarks/results/nowhere.md"
    ]

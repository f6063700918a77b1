"""A full-text index of a corpus: SQLite FTS5, built once per machine, then only read.

The index of a set lives in ``$XDG_CACHE_HOME/palaestra/search_qa/`` (``~/.cache`` by
default), named by the set, the package's version and a digest of the data file and of this
module's layout, so a new package or a new layout gets a new file and an old one is never
read by mistake. It is built on first use into a file of its own and renamed into place
(``os.replace``), under an exclusive ``flock`` on a lock file: two processes racing to
build wait for one another, the second finds the first one's file, and a reader never sees
a half-written index. Readers open it read-only, one connection per thread (tools run in
worker threads), so concurrent rollouts search at once.

Ranking is FTS5's BM25 with a title match weighted above a body match; a query is its
words (Porter-stemmed, diacritics folded), any of which may match: what a search box does
with a question typed into it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from palaestra.envs.search_qa.data import data_file, load, package_version

LAYOUT = 1
"""Bumped when the schema, tokenizer or what is stored changes (a new index file)."""
MAX_QUERY_WORDS = 32
_WORD = re.compile(r"\w+")
_STOP_TEXT = (
    "a about after an and any are as at be been before but by can did do does for from had has "
    "have he her his how i in into is it its me my no not of on or she so than that the their "
    "them then there these they this those to up was we were what when where which while who "
    "whom whose why will with would you your"
)
STOP_WORDS = frozenset(_STOP_TEXT.split())
"""Words too common to find anything: dropped from a query (unless nothing else is left),
which keeps a question-shaped query from ranking most of the corpus."""
_TITLE_WEIGHT, _BODY_WEIGHT = 4.0, 1.0
_SNIPPET_WORDS = 24


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result: a paragraph's title and a snippet around the matched words."""

    title: str
    snippet: str


def cache_directory() -> Path:
    """Where indexes are kept: ``$XDG_CACHE_HOME/palaestra/search_qa``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "palaestra" / "search_qa"


def index_path(dataset: str, directory: Path | None = None) -> Path:
    """The index file of ``dataset`` for the installed package (it may not exist yet)."""
    source = data_file(dataset)
    digest = hashlib.sha256(f"layout {LAYOUT}\n".encode())
    with source.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    name = f"{dataset}-{package_version()}-{digest.hexdigest()[:16]}.sqlite3"
    return (directory or cache_directory()) / name


def ensure_index(dataset: str, directory: Path | None = None) -> Path:
    """The index file of ``dataset``, built now if no process has built it yet."""
    path = index_path(dataset, directory)
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.with_name(path.name + ".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not path.is_file():  # another process may have built it while this one waited
            build(dataset, path)
    return path


def build(dataset: str, path: Path) -> None:
    """Write the index of ``dataset`` beside ``path``, then rename it to ``path``."""
    partial = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.partial")
    partial.unlink(missing_ok=True)
    try:
        connection = sqlite3.connect(partial)
        try:
            connection.executescript(
                """
                PRAGMA journal_mode = OFF;
                PRAGMA synchronous = OFF;
                CREATE VIRTUAL TABLE paragraphs USING fts5(
                    title, body, tokenize = 'porter unicode61 remove_diacritics 2'
                );
                CREATE TABLE titles (title TEXT PRIMARY KEY, folded TEXT NOT NULL, id INTEGER);
                CREATE INDEX titles_folded ON titles (folded);
                """
            )
            corpus = load(dataset).corpus
            connection.executemany(
                "INSERT INTO paragraphs (rowid, title, body) VALUES (?, ?, ?)",
                ((number, title, body) for number, (title, body) in enumerate(corpus.items())),
            )
            connection.executemany(
                "INSERT INTO titles (title, folded, id) VALUES (?, ?, ?)",
                ((title, fold(title), number) for number, title in enumerate(corpus)),
            )
            connection.execute("INSERT INTO paragraphs (paragraphs) VALUES ('optimize')")
            connection.commit()
        finally:
            connection.close()
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def fold(title: str) -> str:
    """A title as ``open`` compares it: case and surrounding space ignored."""
    return " ".join(title.split()).casefold()


def match_expression(query: str) -> str | None:
    """The FTS5 expression of a free-text query (its words, any may match); None if it has
    no word. Each word is quoted, so no character of the query is FTS5 syntax."""
    words = list(dict.fromkeys(_WORD.findall(query.lower())))
    words = ([w for w in words if w not in STOP_WORDS] or words)[:MAX_QUERY_WORDS]
    return " OR ".join(f'"{word}"' for word in words) or None


class CorpusIndex:
    """Read access to one built index; safe to share between threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()

    def _connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            self._local.connection = connection
        return connection

    def search(self, query: str, k: int) -> list[Hit]:
        """The ``k`` best paragraphs for ``query``, best first (none for a query of no word)."""
        expression = match_expression(query)
        if expression is None:
            return []
        rows = self._connection().execute(
            "SELECT title, snippet(paragraphs, 1, '', '', ' ... ', ?) FROM paragraphs "
            "WHERE paragraphs MATCH ? ORDER BY bm25(paragraphs, ?, ?) LIMIT ?",
            (_SNIPPET_WORDS, expression, _TITLE_WEIGHT, _BODY_WEIGHT, k),
        )
        return [Hit(str(title), str(snippet)) for title, snippet in rows]

    def open(self, title: str) -> tuple[str, str] | None:
        """(title as stored, paragraph) of the paragraph titled ``title``, or None. The title
        as written wins; else one that differs only in case or spacing (the first)."""
        row = (
            self._connection()
            .execute(
                "SELECT p.title, p.body FROM titles t JOIN paragraphs p ON p.rowid = t.id "
                "WHERE t.title = ? OR t.folded = ? ORDER BY t.title = ? DESC, t.id LIMIT 1",
                (title, fold(title), title),
            )
            .fetchone()
        )
        return None if row is None else (str(row[0]), str(row[1]))

    def size(self) -> int:
        """How many paragraphs the index holds."""
        row = self._connection().execute("SELECT count(*) FROM titles").fetchone()
        return int(row[0])

"""The shipped set as a manifest: one JSON line per validated task, one file per repository.

``manifest/<repo>.jsonl`` holds the tasks of one repository, sorted by ``instance_id``, each a
JSON object with the fields of ``FIELDS`` (more may be added, none renamed). A line carries
everything a task folder is made from (``folders.task_folder``): the repository and its pinned
Debian release, the bug and the gold patch, the test ids, the statement, the measured flags, and
the id of the base commit's tree. ``digest`` is the SHA-256 of the line's canonical JSON without
``digest`` (keys sorted, no spaces, UTF-8): a folder materialized from the line is cached by it.
Fields beyond the fixed ones: ``mutation`` (the bug's stable key in its module, so a later run
skips it), ``measured`` (false while ``flaky``, ``slow``, ``off_target`` and ``test_seconds``
are still to be measured: lines converted from folders) and ``variant_of``.

Reading is strict: a line that is not a JSON object, lacks a field, has one of the wrong type,
or whose digest does not match its content is one ``ConfigError`` naming the file, the line
and the field, never a traceback.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from palaestra import ConfigError

Line = dict[str, Any]
"""One task of the manifest (a parsed JSON line)."""

SHIPPED = Path(__file__).with_name("manifest")
"""The manifest directory the package ships."""
LEVELS = ("easy", "medium", "hard")
FLAGS = ("flaky", "slow", "duplicate_of", "leaks_fix", "off_target")


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _is_texts(value: Any) -> bool:
    return isinstance(value, list) and all(_is_text(item) for item in value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _difficulty(value: Any) -> str | None:
    if not isinstance(value, dict):
        return "must be an object {lines, files, level}"
    for key in ("lines", "files"):
        if not _is_int(value.get(key)) or value[key] < 1:
            return f"'{key}' must be a positive integer"
    if value.get("level") not in LEVELS:
        return f"'level' must be one of {', '.join(LEVELS)}"
    return None


def _flags(value: Any) -> str | None:
    if not isinstance(value, dict):
        return "must be an object"
    for key in FLAGS:
        if key not in value:
            return f"'{key}' is missing"
        if key == "duplicate_of":
            if value[key] is not None and not _is_text(value[key]):
                return "'duplicate_of' must be an instance id or null"
        elif not isinstance(value[key], bool):
            return f"'{key}' must be true or false"
    return None


def _check(test: Callable[[Any], bool], wanted: str) -> Callable[[Any], str | None]:
    return lambda value: None if test(value) else f"must be {wanted}"


FIELDS: dict[str, Callable[[Any], str | None]] = {
    "instance_id": _check(
        lambda v: _is_text(v) and re.fullmatch(r"[A-Za-z0-9_.\-]+", v) is not None,
        "a name of letters, digits, '_', '.' and '-'",
    ),
    "repo": _check(_is_text, "a repository's short name"),
    "language": _check(_is_text, "a language name"),
    "source": _check(_is_text, "the Debian binary package"),
    "version": _check(_is_text, "the package's Debian version"),
    "kind": _check(_is_text, "a mutation kind"),
    "kinds": _check(lambda v: _is_texts(v) and bool(v), "a non-empty list of mutation kinds"),
    "files": _check(lambda v: _is_texts(v) and bool(v), "a non-empty list of paths"),
    "functions": _check(lambda v: _is_texts(v) and bool(v), "a non-empty list of names"),
    "bug": _check(lambda v: _is_text(v) and v.startswith("--- a/"), "a unified diff"),
    "patch": _check(lambda v: _is_text(v) and v.startswith("--- a/"), "a unified diff"),
    "FAIL_TO_PASS": _check(lambda v: _is_texts(v) and bool(v), "a non-empty list of test ids"),
    "PASS_TO_PASS": _check(_is_texts, "a list of test ids"),
    "statement": _check(_is_text, "the problem statement"),
    "difficulty": _difficulty,
    "flags": _flags,
    "test_seconds": _check(
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0,
        "a number of seconds",
    ),
    "seed": _check(_is_int, "an integer"),
    "base_tree": _check(
        lambda v: isinstance(v, str) and re.fullmatch(r"[0-9a-f]{40}", v) is not None,
        "a git tree id (40 hex digits)",
    ),
    "digest": _check(
        lambda v: isinstance(v, str) and re.fullmatch(r"sha256:[0-9a-f]{64}", v) is not None,
        "'sha256:' and 64 hex digits",
    ),
}
"""Each field a line must have, and its check (None, or what the value must be)."""


def canonical(line: Mapping[str, Any]) -> bytes:
    """The canonical JSON of ``line`` without ``digest`` (what the digest is of)."""
    body = {key: value for key, value in line.items() if key != "digest"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest(line: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``line`` without its ``digest``."""
    return f"sha256:{hashlib.sha256(canonical(line)).hexdigest()}"


def sealed(line: Mapping[str, Any]) -> Line:
    """``line`` with its ``digest`` (re)computed."""
    body = {key: value for key, value in line.items() if key != "digest"}
    return {**body, "digest": digest(body)}


def problem(line: Any) -> tuple[str, str] | None:
    """The first (field, what is wrong) of ``line``, or None when it is a valid task."""
    if not isinstance(line, dict):
        return ("-", "the line is not a JSON object")
    for name, check in FIELDS.items():
        if name not in line:
            return (name, "is missing")
        wrong = check(line[name])
        if wrong is not None:
            return (name, wrong)
    if line["kind"] != "combined" and line["kinds"] != [line["kind"]]:
        return ("kinds", f"must be [{line['kind']!r}] for a single mutation")
    if set(line["FAIL_TO_PASS"]) & set(line["PASS_TO_PASS"]):
        return ("PASS_TO_PASS", "shares test ids with FAIL_TO_PASS")
    if not line["instance_id"].startswith(f"{line['repo']}__"):
        return ("instance_id", f"must start with the repository's name ('{line['repo']}__')")
    if "measured" in line and not isinstance(line["measured"], bool):
        return ("measured", "must be true or false")
    if line["digest"] != digest(line):
        return ("digest", "does not match the line's content (edited by hand? reseal it)")
    return None


def parse(text: str, where: str) -> Line:
    """One manifest line; a ``ConfigError`` naming ``where`` (file:line) and the field."""
    try:
        line = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{where}: not JSON: {error.msg}") from None
    wrong = problem(line)
    if wrong is not None:
        field, what = wrong
        raise ConfigError(
            f"{where}: field '{field}' {what}" if field != "-" else f"{where}: {what}"
        )
    return dict(line)


def read_file(path: Path) -> list[Line]:
    """The lines of one manifest file (blank lines skipped), each checked (see ``parse``); a
    repository's file holds only its own, sorted and without a repeated id."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot be read: {error}") from None
    lines: list[Line] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        where = f"{path}:{number}"
        line = parse(raw, where)
        if lines and line["instance_id"] <= lines[-1]["instance_id"]:
            raise ConfigError(f"{where}: field 'instance_id' is out of order or repeated")
        if path.suffix == ".jsonl" and line["repo"] != path.stem:
            raise ConfigError(f"{where}: field 'repo' is '{line['repo']}' in {path.name}")
        lines.append(line)
    return lines


def read_directory(root: Path = SHIPPED) -> list[Line]:
    """Every line of every ``*.jsonl`` in ``root``, sorted by ``instance_id``."""
    if not root.is_dir():
        raise ConfigError(f"{root}: no such manifest directory")
    lines = [line for path in sorted(root.glob("*.jsonl")) for line in read_file(path)]
    seen: set[str] = set()
    for line in lines:
        if line["instance_id"] in seen:
            raise ConfigError(f"{root}: instance '{line['instance_id']}' is in two files")
        seen.add(line["instance_id"])
    return sorted(lines, key=lambda line: str(line["instance_id"]))


def write_file(path: Path, lines: Iterable[Mapping[str, Any]]) -> int:
    """Write ``lines`` (sealed, sorted by id, one per id: the last given wins) to ``path``,
    beside and then moved; the number written."""
    by_id = {str(line["instance_id"]): sealed(line) for line in lines}
    text = "".join(
        json.dumps(by_id[name], ensure_ascii=False, sort_keys=False) + "\n"
        for name in sorted(by_id)
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
    return len(by_id)


def add(root: Path, new: Iterable[Mapping[str, Any]]) -> int:
    """Merge ``new`` lines into ``root``'s per-repository files (a line with an id already
    there replaces it); the number of lines in the files touched."""
    by_repo: dict[str, list[Mapping[str, Any]]] = {}
    for line in new:
        by_repo.setdefault(str(line["repo"]), []).append(line)
    total = 0
    for repo, lines in sorted(by_repo.items()):
        path = root / f"{repo}.jsonl"
        old = read_file(path) if path.is_file() else []
        total += write_file(path, [*old, *lines])
    return total

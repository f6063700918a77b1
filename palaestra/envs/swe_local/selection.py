"""Choosing tasks of the manifest (``--filter``) and summing them up (``--summary``).

A filter is terms joined by ``,`` (all must hold), each ``FIELD=VALUE`` with ``|`` between
values one of which must match: ``repo``, ``language``, ``kind`` (any of a combined task's
kinds), ``source``, ``difficulty`` (``easy``/``medium``/``hard``), and the flags ``flaky``,
``slow``, ``duplicate`` (``duplicate_of`` set), ``leaks_fix``, ``off_target`` (``true`` or
``false``); ``clean`` alone means every flag false. Example:
``language=python,difficulty=medium|hard,clean``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from palaestra import ConfigError

FLAG_TERMS = ("flaky", "slow", "duplicate", "leaks_fix", "off_target")
TEXT_TERMS = ("repo", "language", "kind", "source", "difficulty")

Term = tuple[str, frozenset[str]]


def parse_filter(text: str) -> list[Term]:
    """The terms of ``text``; a one-line ``ConfigError`` naming the bad term."""
    terms: list[Term] = []
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        if item == "clean":
            terms += [(flag, frozenset({"false"})) for flag in FLAG_TERMS]
            continue
        name, equals, values = item.partition("=")
        name = name.strip()
        choices = frozenset(value.strip() for value in values.split("|") if value.strip())
        if not equals or not choices:
            raise ConfigError(f"--filter: '{item}' is not FIELD=VALUE (or 'clean')")
        if name in FLAG_TERMS:
            if not choices <= {"true", "false"}:
                raise ConfigError(f"--filter: '{item}': {name} is true or false")
        elif name not in TEXT_TERMS:
            known = ", ".join((*TEXT_TERMS, *FLAG_TERMS, "clean"))
            raise ConfigError(f"--filter: '{item}': no field '{name}' (one of {known})")
        terms.append((name, choices))
    return terms


def _values(line: Mapping[str, Any], name: str) -> set[str]:
    flags = line["flags"]
    if name == "duplicate":
        return {"true" if flags["duplicate_of"] else "false"}
    if name in FLAG_TERMS:
        return {"true" if flags[name] else "false"}
    if name == "kind":
        return {str(line["kind"]), *map(str, line["kinds"])}
    if name == "difficulty":
        return {str(line["difficulty"]["level"])}
    return {str(line[name])}


def matches(line: Mapping[str, Any], terms: Sequence[Term]) -> bool:
    return all(_values(line, name) & choices for name, choices in terms)


def selected(lines: Iterable[Mapping[str, Any]], terms: Sequence[Term]) -> list[dict[str, Any]]:
    """The lines every term holds for; a filter that keeps none is a ``ConfigError``."""
    kept = [dict(line) for line in lines if matches(line, terms)]
    if not kept:
        raise ConfigError("--filter: no task matches")
    return kept


def summary(lines: Sequence[Mapping[str, Any]]) -> str:
    """Tasks per language and repository, the mutation kinds, difficulty and flags counted."""
    out: list[str] = []
    total = len(lines)
    repos = {(str(line["language"]), str(line["repo"])) for line in lines}
    languages = Counter(str(line["language"]) for line in lines)
    out.append(f"{total} tasks, {len(repos)} repositories, {len(languages)} languages")
    out.append("")
    out.append(f"{'language':10} {'repository':22} {'version':18} {'tasks':>6}")
    per_repo = Counter((str(t["language"]), str(t["repo"]), str(t["version"])) for t in lines)
    for (language, repo, version), count in sorted(per_repo.items()):
        out.append(f"{language:10} {repo:22} {version:18} {count:6}")
    for language, count in sorted(languages.items()):
        out.append(f"{language:10} {'(all)':22} {'':18} {count:6}")
    out.append("")
    kinds = Counter(str(line["kind"]) for line in lines)
    out.append("kinds: " + ", ".join(f"{kind} {n}" for kind, n in kinds.most_common()))
    levels = Counter(str(line["difficulty"]["level"]) for line in lines)
    out.append(
        "difficulty: " + ", ".join(f"{lvl} {levels[lvl]}" for lvl in ("easy", "medium", "hard"))
    )
    counts = {name: sum("true" in _values(line, name) for line in lines) for name in FLAG_TERMS}
    out.append("flags: " + ", ".join(f"{name} {n}" for name, n in counts.items()))
    clean = sum(all("false" in _values(line, name) for name in FLAG_TERMS) for line in lines)
    out.append(f"clean (no flag): {clean}")
    unmeasured = sum(line.get("measured") is False for line in lines)
    if unmeasured:
        out.append(
            f"not yet measured (flaky, slow, off_target, test seconds): {unmeasured} "
            "(recheck --measure)"
        )
    seconds = sorted(float(t["test_seconds"]) for t in lines if t.get("measured") is not False)
    if seconds:
        median = seconds[len(seconds) // 2]
        out.append(f"test seconds (gold run): median {median:.1f}, max {seconds[-1]:.1f}")
    return "\n".join(out)

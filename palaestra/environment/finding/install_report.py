"""What ``scripts/install.sh`` installed for each suite, in one calm line each.

Several suites are installed with ``pip install --no-deps``: their packages declare
dependencies (LLM SDKs, web stacks, pinned numpy) for code palaestra never runs. pip would
then print a resolver ``ERROR:`` block on every later install; the script turns that warning
off and prints this instead: for each built-in environment that needs a suite, whether its
modules import here (the catalogue's real import check) and which of its distributions'
declared dependencies were left out or are held at another version. Run as
``python -m palaestra.environment.finding.install_report``; exits 1 if a suite that is
installed does not import.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata

from palaestra.environment.finding.catalogue import CatalogueEntry, catalogue

SHOWN = 4
"""Left-out dependencies named per line; the rest are counted."""

_NAME = re.compile(
    r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?:\(?\s*==\s*([^\s,;)]+))?"
)
"""A requirement's distribution name and, when it pins one with ``==``, the version."""


def unmet(distribution: str) -> list[str]:
    """The declared dependencies of ``distribution`` (extras and conditional ones aside) that
    are not installed (``name``) or not at the version it pins (``name X for its ==Y``)."""
    try:
        declared = metadata.requires(distribution) or []
    except metadata.PackageNotFoundError:
        return []
    found: list[str] = []
    for requirement in declared:
        if ";" in requirement:
            continue  # an extra's or a platform's: not what a plain install brings
        match = _NAME.match(requirement)
        if match is None:
            continue
        name, pin = match.group(1), match.group(2)
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            found.append(name.lower())
            continue
        if pin is not None and not pin.endswith("*") and version != pin:
            found.append(f"{name.lower()} {version} for its =={pin}")
    return found


def line(entry: CatalogueEntry) -> str:
    """One environment's line: ready or not, and what its suite was installed without."""
    if not entry.installed:
        return f"  {entry.name}: NOT ready: missing {', '.join(entry.missing)}"
    left = [f"{dist} without {_names(unmet(dist))}" for dist in entry.requires if unmet(dist)]
    if not left:
        return f"  {entry.name}: ready"
    return f"  {entry.name}: ready; {'; '.join(left)} (unused here)"


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN])
    more = len(names) - SHOWN
    return f"{shown} and {more} more" if more > 0 else shown


def report() -> tuple[list[str], bool]:
    """The lines for every built-in that needs a suite, and whether all of them are ready."""
    entries = [e for e in catalogue()[0] if e.source == "built-in" and e.requires]
    lines = ["Suites (installed with --no-deps where noted; scripts/install.sh says why):"]
    lines += [line(entry) for entry in entries]
    return lines, all(entry.installed for entry in entries)


def main() -> int:
    lines, ready = report()
    for text in lines:
        print(text)
    return 0 if ready else 1


if __name__ == "__main__":
    sys.exit(main())

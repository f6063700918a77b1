"""The seam between the set's machinery and a language: what differs per language.

A language is a module ``palaestra.envs.swe_local.languages.<name>`` whose ``LANGUAGE``
implements ``Language``; a manifest line names it in ``language`` and ``language(name)`` loads
it. The manifest, the materialization and its cache, the summary and filters, the flags and
the generator's bookkeeping are shared; a language gives:

- its repositories (``repos``): short name to the Debian package that ships the source and
  tests, the upstream, the licence;
- the task's machine: ``dockerfile_prefix`` (the steps every task of a repository shares, so
  an image builder reuses their layers) and ``dockerfile`` (the prefix, then the bug made the
  base commit);
- the verifier: ``test_script`` (``tests/test.sh``) and ``verifier_files`` (the rest of
  ``tests/``), which run the line's test ids and write the reward;
- the last part of the instruction (``instruction_footer``: where the repository is and how
  its tests run);
- for the generator: ``test_command`` (the ids run in the machine) and ``outcomes`` (a test
  report to each test id's ``passed``/``failed``/``error``/``skipped``), and ``mutations``
  over one source file.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from palaestra import ConfigError


@dataclass(frozen=True)
class Repo:
    """One repository a language's tasks come from, pinned to a Debian package."""

    name: str
    """The short name (the manifest's ``repo``)."""
    source: str
    """The Debian binary package that ships the source and its tests."""
    upstream: str
    """Where the project lives (``owner/name``)."""
    license: str
    """Its licence (SPDX)."""
    root: str = ""
    """Where the source is in the package's files (a language's own meaning)."""
    extras: tuple[str, ...] = ()
    """Debian packages the machine installs beside ``source``: what its tests import that the
    package does not depend on (the generator's root filesystem must hold no more)."""


@dataclass(frozen=True)
class SourceMutation:
    """One candidate bug in a source file: its kind, the function, the text after it."""

    kind: str
    function: str
    key: str
    """A stable name of the mutation within its file."""
    text: str
    """The whole file with the mutation made."""


class Language(Protocol):
    """What one language gives the set (see the module docstring)."""

    name: str

    def repos(self) -> Mapping[str, Repo]: ...

    def dockerfile_prefix(self, repo: str) -> str: ...

    def dockerfile(self, line: Mapping[str, Any]) -> str: ...

    def test_script(self, line: Mapping[str, Any]) -> str: ...

    def verifier_files(self, line: Mapping[str, Any]) -> dict[str, str]: ...

    def instruction_footer(self, line: Mapping[str, Any]) -> str: ...

    def test_command(self, ids: Sequence[str]) -> list[str]: ...

    def outcomes(self, report: bytes, ids: Sequence[str]) -> dict[str, str]: ...

    def mutations(self, path: str, source: str) -> list[SourceMutation]: ...


def language(name: str) -> Language:
    """The language ``name`` (its module's ``LANGUAGE``); a one-line ``ConfigError`` when
    there is none."""
    if not name.isidentifier():
        raise ConfigError(f"language '{name}' is not a module name")
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError:
        raise ConfigError(f"no language '{name}' (no module {__name__}.{name})") from None
    found = getattr(module, "LANGUAGE", None)
    if found is None:
        raise ConfigError(f"{module.__name__} has no LANGUAGE")
    return found  # type: ignore[no-any-return]

"""A Dockerfile, read into instructions: the subset the ``rootfs`` provider builds.

Supported: ``FROM``, ``RUN`` (shell and exec form), ``COPY`` and ``ADD`` of files from the
build context (``--chown`` and ``--chmod`` honoured; no URLs, no archives unpacked by
``ADD``, no ``--from``), ``WORKDIR``, ``ENV``, ``USER``, ``ARG``; ``LABEL``, ``EXPOSE``,
``CMD``, ``ENTRYPOINT``, ``VOLUME``, ``STOPSIGNAL``, ``HEALTHCHECK``, ``SHELL`` and
``MAINTAINER`` are read and ignored (a box runs the commands it is given). Anything else,
and more than one ``FROM`` (multi-stage builds), is refused with one line naming the file,
the line and the instruction: a build that silently differs from Docker's is worse than
none. Variables (``$NAME``, ``${NAME}``, ``${NAME:-default}``) are substituted in the
instructions Docker substitutes them in, from ``ARG`` and ``ENV``.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from palaestra.errors import SandboxFailure

BUILT = frozenset({"FROM", "RUN", "COPY", "ADD", "WORKDIR", "ENV", "USER", "ARG"})
IGNORED = frozenset(
    {
        "LABEL",
        "EXPOSE",
        "CMD",
        "ENTRYPOINT",
        "VOLUME",
        "STOPSIGNAL",
        "HEALTHCHECK",
        "SHELL",
        "MAINTAINER",
    }
)
_VARIABLE = re.compile(
    r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?\}"
    r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)


@dataclass(frozen=True, slots=True)
class Instruction:
    """One instruction: its keyword, its text after the keyword, and where it was written."""

    keyword: str
    text: str
    line: int
    file: str

    def where(self) -> str:
        return f"{self.file}:{self.line}"

    def exec_form(self) -> list[str] | None:
        """The JSON array form's arguments (``RUN ["a", "b"]``), or ``None``."""
        stripped = self.text.strip()
        if not stripped.startswith("["):
            return None
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError:
            return None
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return value
        return None

    def refuse(self, why: str) -> SandboxFailure:
        return SandboxFailure(f"{self.where()}: {self.keyword} {why}")


def read(path: Path) -> list[Instruction]:
    """The instructions of the Dockerfile at ``path``, unsupported ones refused."""
    try:
        source = path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise SandboxFailure(f"cannot read {path}: {error}") from None
    return parse(source, str(path))


def parse(source: str, name: str = "Dockerfile") -> list[Instruction]:
    """Instructions of a Dockerfile's text (comments, blank lines and ``\\`` joined)."""
    instructions: list[Instruction] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(source.splitlines(), 1):
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # comment lines inside a continued instruction are dropped, as Docker does
        if not pending:
            start = number
        if raw.rstrip().endswith("\\"):
            pending.append(raw.rstrip()[:-1])
            continue
        pending.append(raw)
        instructions.append(_instruction(" ".join(part.strip() for part in pending), start, name))
        pending = []
    if pending:
        instructions.append(_instruction(" ".join(part.strip() for part in pending), start, name))
    froms = [item for item in instructions if item.keyword == "FROM"]
    if not froms or instructions[0].keyword not in ("FROM", "ARG"):
        raise SandboxFailure(f"{name}: a Dockerfile must start with FROM")
    if len(froms) > 1:
        raise froms[1].refuse("again: multi-stage builds are not supported by the rootfs builder")
    return instructions


def _instruction(text: str, line: int, name: str) -> Instruction:
    keyword, _, rest = text.strip().partition(" ")
    instruction = Instruction(keyword.upper(), rest.strip(), line, name)
    if instruction.keyword not in BUILT | IGNORED:
        raise instruction.refuse("is not supported by the rootfs builder")
    return instruction


def substitute(text: str, variables: Mapping[str, str]) -> str:
    """``text`` with ``$NAME``, ``${NAME}`` and ``${NAME:-default}`` replaced (unset: empty)."""

    def value(match: re.Match[str]) -> str:
        name = match.group("braced") or match.group("bare")
        found = variables.get(name)
        if found:
            return found
        default = match.group("default")
        return default if default is not None else (found or "")

    return _VARIABLE.sub(value, text)


def flags(instruction: Instruction, allowed: tuple[str, ...]) -> tuple[dict[str, str], list[str]]:
    """The ``--name=value`` flags of an instruction and its other words (shell-quoted or
    the JSON array form)."""
    words = instruction.exec_form()
    if words is None:
        try:
            words = shlex.split(instruction.text)
        except ValueError as error:
            raise instruction.refuse(f"cannot be read: {error}") from None
    found: dict[str, str] = {}
    while words and words[0].startswith("--"):
        name, _, value = words.pop(0)[2:].partition("=")
        if name not in allowed:
            raise instruction.refuse(f"--{name} is not supported by the rootfs builder")
        found[name] = value
    return found, words


def pairs(instruction: Instruction, variables: Mapping[str, str]) -> list[tuple[str, str]]:
    """The ``NAME=value`` pairs of ``ENV``/``ARG``/``LABEL`` (or the old ``ENV NAME value``)."""
    text = instruction.text.strip()
    try:
        words = shlex.split(text)
    except ValueError as error:
        raise instruction.refuse(f"cannot be read: {error}") from None
    if not words:
        raise instruction.refuse("needs a name")
    if "=" not in words[0]:
        if instruction.keyword == "ARG":
            return [(words[0], "")] if len(words) == 1 else []
        name, _, value = text.partition(" ")
        return [(name, substitute(value.strip(), variables))]
    found: list[tuple[str, str]] = []
    for word in words:
        name, equals, value = word.partition("=")
        if not equals:
            raise instruction.refuse(f"word {word!r} is not NAME=value")
        found.append((name, substitute(value, variables)))
    return found

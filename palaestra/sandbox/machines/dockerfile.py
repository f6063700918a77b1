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
    return parse(_text(path), str(path))


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise SandboxFailure(f"cannot read {path}: {error}") from None


def parse(source: str, name: str = "Dockerfile") -> list[Instruction]:
    """Instructions of a Dockerfile's text, as the rootfs builder builds them: what ``scan``
    reads, with what it cannot build (an escape character other than ``\\``, a first
    instruction other than ``FROM``, more than one ``FROM``, an unknown instruction) refused."""
    scanned = scan(source, name)
    if scanned.escape != "\\":
        raise SandboxFailure(
            f"{name}:{scanned.escape_line}: the escape directive "
            f"{scanned.escape!r} is not supported by the rootfs builder"
        )
    instructions = scanned.instructions
    froms = [item for item in instructions if item.keyword == "FROM"]
    if not froms or instructions[0].keyword not in ("FROM", "ARG"):
        raise SandboxFailure(f"{name}: a Dockerfile must start with FROM")
    for instruction in instructions:
        if instruction.keyword == "FROM" and instruction is not froms[0]:
            raise instruction.refuse(
                "again: multi-stage builds are not supported by the rootfs builder"
            )
        if instruction.keyword not in BUILT | IGNORED:
            raise instruction.refuse("is not supported by the rootfs builder")
    return instructions


@dataclass(frozen=True, slots=True)
class Scanned:
    """A Dockerfile as Docker splits it: its instructions and its escape character."""

    instructions: list[Instruction]
    escape: str = "\\"
    escape_line: int = 0
    """The line of the ``# escape=`` directive (0: none)."""


def scan(source: str, name: str = "Dockerfile") -> Scanned:
    """Every instruction of a Dockerfile's text, split into instructions the way Docker's
    parser splits it (nothing refused): parser directives at the top (``# escape=`` changes
    the line continuation character), comment lines dropped (inside a continued instruction
    too), blank lines inside a continued instruction skipped, continued lines joined as Docker
    joins them, the keyword ended by any white space."""
    escape, escape_line = "\\", 0
    directives = True
    instructions: list[Instruction] = []
    pending: str | None = None
    start = 0
    for number, raw in enumerate(source.splitlines(), 1):
        stripped = raw.strip()
        if directives:
            directive = _DIRECTIVE.match(raw) if pending is None else None
            if directive is not None and directive.group(1).lower() in _DIRECTIVES:
                if directive.group(1).lower() == "escape":
                    escape, escape_line = directive.group(2), number
                continue
            directives = False
        if stripped.startswith("#") or (pending is None and not stripped):
            continue  # a comment, or a blank line between instructions
        if pending is not None and not stripped:
            continue  # Docker skips a blank line inside a continued instruction
        text = raw.lstrip() if pending is None else raw
        if pending is None:
            start, pending = number, ""
        end = re.search(re.escape(escape) + r"[ \t]*$", text)
        if end is not None:
            pending += text[: end.start()]
            continue
        instructions.append(_instruction(pending + text, start, name))
        pending = None
    if pending is not None:
        instructions.append(_instruction(pending, start, name))
    return Scanned(instructions, escape, escape_line)


_DIRECTIVE = re.compile(r"^#\s*([A-Za-z][A-Za-z0-9_]*)\s*=\s*(\S+)\s*$")
_DIRECTIVES = frozenset({"escape", "syntax", "check"})


def _instruction(text: str, line: int, name: str) -> Instruction:
    keyword, *rest = re.split(r"[ \t\v\f\r]+", text.strip(), maxsplit=1)
    return Instruction(keyword.upper(), rest[0].strip() if rest else "", line, name)


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
    """The ``NAME=value`` pairs of ``ENV``/``ARG``/``LABEL`` (or the old ``ENV NAME value``),
    values substituted (an ``ARG`` without a default: empty)."""
    return [(name, substitute(value or "", variables)) for name, value in raw_pairs(instruction)]


def raw_pairs(instruction: Instruction) -> list[tuple[str, str | None]]:
    """``pairs`` before substitution; ``None`` for an ``ARG`` declared without a default."""
    text = instruction.text.strip()
    try:
        words = shlex.split(text)
    except ValueError as error:
        raise instruction.refuse(f"cannot be read: {error}") from None
    if not words:
        raise instruction.refuse("needs a name")
    if "=" not in words[0]:
        if instruction.keyword == "ARG":
            return [(words[0], None)] if len(words) == 1 else []
        name, _, value = text.partition(" ")
        return [(name, value.strip())]
    found: list[tuple[str, str | None]] = []
    for word in words:
        name, equals, value = word.partition("=")
        if not equals:
            raise instruction.refuse(f"word {word!r} is not NAME=value")
        found.append((name, value))
    return found


# -- what a provider refuses to build, said when the task is loaded ---------------------------

PROXY_ARGS = frozenset(
    name
    for base in ("HTTP_PROXY", "HTTPS_PROXY", "FTP_PROXY", "NO_PROXY", "ALL_PROXY")
    for name in (base, base.lower())
)
"""Docker's predefined build arguments: the client's configuration may set them, so their
value is never known from the Dockerfile alone."""
_ADD_FLAGS = frozenset({"chown", "chmod", "link", "exclude"})
"""``ADD`` flags that concern only local files (``--checksum`` and ``--keep-git-dir`` are
for remote sources)."""
_RUN_SAFE = {"network": "none", "security": "sandbox"}
"""The only values of these ``RUN`` flags a build here runs with."""
_UNKNOWN = None


def docker_refusal(context: Path) -> str | None:
    """Why the Docker daemon must not build ``context``'s Dockerfile as written (one line
    naming the file, the line and the instruction), or ``None``.

    ``--network none`` keeps a build's ``RUN`` steps off the network, but the daemon itself
    fetches what an instruction names from the host's network. Refused: ``ADD`` of a URL
    (any ``scheme://``) or of a git source (``git@``, ``git://``, ``*.git``, ``github.com/``),
    ``ADD --checksum``/``--keep-git-dir`` (or any flag not about local files), ``COPY --from``
    and ``RUN --mount=from=`` naming an image rather than an earlier stage, ``RUN
    --network``/``--security``, and the same inside ``ONBUILD``. Sources are read after
    ``ARG``/``ENV`` substitution; a variable whose value the Dockerfile alone does not fix
    (undeclared, an ``ARG`` without a default, a proxy argument) is refused where it could
    name a source."""
    path = context / "Dockerfile"
    if not path.is_file():
        return f"{context} has no Dockerfile"
    try:
        _check_docker(scan(_text(path), str(path)).instructions)
    except SandboxFailure as error:
        return str(error)
    return None


def _check_docker(instructions: list[Instruction]) -> None:
    """Raise the refusal of the first instruction that would make the daemon fetch."""
    global_args: dict[str, str | None] = {}
    stage_envs: dict[str, dict[str, str | None]] = {}
    stages: list[str] = []
    args: dict[str, str | None] = {}
    env: dict[str, str | None] = {}
    for instruction in instructions:
        variables = {**args, **env} if stages else dict(global_args)
        keyword = instruction.keyword
        if keyword == "FROM":
            if stages:
                stage_envs[stages[-1]] = stage_envs[str(len(stages) - 1)] = env
            _, rest = leading_flags(instruction.text)
            words = rest.split()
            image = resolve(words[0], global_args) if words else None
            name = words[2].lower() if len(words) >= 3 and words[1].lower() == "as" else ""
            env = dict(stage_envs.get((image or "").lower(), {}))
            args = {}
            stages.append(name or f"#{len(stages)}")
        elif keyword == "ARG":
            for name, value in raw_pairs(instruction):
                if name in PROXY_ARGS:
                    known = _UNKNOWN
                elif value is None:
                    known = global_args.get(name) if stages else _UNKNOWN
                else:
                    known = resolve(value, variables)
                (args if stages else global_args)[name] = known
        elif keyword == "ENV":
            for name, value in raw_pairs(instruction):
                env[name] = resolve(value or "", variables)
        else:
            _check_fetch(instruction, variables, stages[:-1])


def _check_fetch(
    instruction: Instruction, variables: Mapping[str, str | None], earlier: list[str]
) -> None:
    keyword = instruction.keyword
    if keyword == "ONBUILD":  # runs in another build: none of its variables is known here
        inner = _instruction(instruction.text, instruction.line, instruction.file)
        _check_fetch(
            Instruction(f"ONBUILD {inner.keyword}", inner.text, inner.line, inner.file), {}, []
        )
        return
    base = keyword.removeprefix("ONBUILD ")
    options, rest = leading_flags(instruction.text)
    for option in options:
        name, _, value = option[2:].partition("=")
        if base == "ADD" and name not in _ADD_FLAGS:
            raise instruction.refuse(
                f"--{name}: not a flag for local files (the Docker daemon fetches remote "
                "sources from the host's network; nothing may be fetched here)"
            )
        if base == "COPY" and name == "from":
            _check_stage(instruction, f"--from={value}", value, variables, earlier)
        if base == "RUN" and name == "mount":
            for part in value.split(","):
                key, _, source = part.partition("=")
                if key.strip().lower() == "from":
                    _check_stage(instruction, f"--mount from={source}", source, variables, earlier)
        if base == "RUN" and _RUN_SAFE.get(name, value) != value:
            raise instruction.refuse(f"--{name}={value}: builds here run with no network")
    if base != "ADD":
        return
    words = _json_words(rest)
    resolved = [resolve(word, variables) for word in (words if words is not None else [rest])]
    if None in resolved:
        raise instruction.refuse(
            f"{_short(rest)}: a variable here has no value fixed by the Dockerfile (a build "
            "argument or the base image could make it a URL the Docker daemon fetches)"
        )
    plain = " ".join(word or "" for word in resolved)
    remote = _remote(re.sub(r"[\"'\\`]", "", plain))
    if remote is not None:
        raise instruction.refuse(
            f"of {_short(remote)}: a remote source, which the Docker daemon would fetch from "
            "the host's network (nothing may be fetched here: COPY it from the build context)"
        )


def _json_words(text: str) -> list[str] | None:
    """The strings of an instruction's JSON array form, or ``None``."""
    if not text.startswith("["):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    return None


def _check_stage(
    instruction: Instruction,
    shown: str,
    value: str,
    variables: Mapping[str, str | None],
    earlier: list[str],
) -> None:
    """Refuse a ``--from`` that does not name an earlier stage (by name or index)."""
    name = resolve(value, variables)
    if name is not None and (
        name.lower() in earlier or (name.isdigit() and int(name) < len(earlier))
    ):
        return
    raise instruction.refuse(
        f"{_short(shown)}: names no earlier stage of this Dockerfile, so the Docker daemon "
        "would pull an image from the network (nothing is pulled here)"
    )


def leading_flags(text: str) -> tuple[list[str], str]:
    """The leading ``--flag`` words of an instruction (quotes dropped) and the rest."""
    found: list[str] = []
    rest = text.strip()
    while match := _WORD.match(rest):
        word = match.group(1).replace('"', "").replace("'", "")
        if not word.startswith("--"):
            break
        found.append(word)
        rest = rest[match.end() :]
    return found, rest


_WORD = re.compile(r"""((?:"[^"]*"|'[^']*'|[^\s"'])+)\s*""")


def _remote(text: str) -> str | None:
    """The first word of ``text`` that names something to fetch, or ``None``."""
    for word in re.split(r"[\s\[\],]+", text):
        if (
            "://" in word
            or word.startswith(("git@", "github.com/"))
            or re.search(r"\.git(#.*)?$", word)
        ):
            return word
    return text if "://" in text else None


def _short(text: str) -> str:
    return text if len(text) <= 120 else text[:117] + "..."


def resolve(text: str, variables: Mapping[str, str | None]) -> str | None:
    """``text`` with its variables replaced as Docker replaces them (``$NAME``, ``${NAME}``,
    ``${NAME:-word}``, ``${NAME-word}``, ``${NAME:+word}``, ``${NAME+word}``), or ``None``
    when one has no known value in ``variables`` (absent, or ``None``) or another form is
    used: what cannot be known is not guessed."""
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char != "$":
            out.append(char)
            index += 1
            continue
        if text.startswith("${", index):
            depth, end = 1, index + 2
            while end < len(text) and depth:
                depth += {"{": 1, "}": -1}.get(text[end], 0)
                end += 1
            if depth:
                return None
            match = _BRACED.fullmatch(text[index + 2 : end - 1])
            if match is None:
                return None
            value = variables.get(match.group("name"))
            if value is None:
                return None
            operator, word = match.group("operator"), match.group("word")
            if operator in (":-", "-"):
                chosen: str | None = value if value or operator == "-" else resolve(word, variables)
            elif operator in (":+", "+"):
                chosen = resolve(word, variables) if value or operator == "+" else ""
            else:
                chosen = value
            if chosen is None:
                return None
            out.append(chosen)
            index = end
            continue
        bare = _BARE.match(text, index + 1)
        if bare is None:
            out.append(char)
            index += 1
            continue
        value = variables.get(bare.group(0))
        if value is None:
            return None
        out.append(value)
        index = bare.end()
    return "".join(out)


_BRACED = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<operator>:?[-+])(?P<word>.*))?", re.S)
_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def rootfs_refusal(context: Path) -> str | None:
    """Why the rootfs builder cannot build ``context``'s Dockerfile (one line naming the
    file, the line and the instruction), or ``None``: what ``parse`` refuses (several
    ``FROM``, ``ONBUILD``, an unknown instruction, another escape character), a base image
    other than the offline Debian one, any ``RUN`` flag (``--mount``...), a ``COPY``/``ADD``
    flag other than ``--chown``/``--chmod``, and a remote source."""
    from palaestra.sandbox.machines.build import BASE_IMAGES  # builds with this module

    path = context / "Dockerfile"
    if not path.is_file():
        return f"{context} has no Dockerfile"
    try:
        args: dict[str, str] = {}
        env: dict[str, str] = {}
        for instruction in read(path):
            variables = {**args, **env}
            keyword = instruction.keyword
            if keyword == "FROM":
                words = substitute(instruction.text, args).split()
                image = words[0] if words else ""
                if image not in BASE_IMAGES:
                    raise instruction.refuse(
                        f"{image}: only the offline Debian bases ({', '.join(sorted(BASE_IMAGES))})"
                        " are built by the rootfs builder"
                    )
                args = {}
            elif keyword == "ARG":
                for name, value in pairs(instruction, variables):
                    args[name] = value or args.get(name, "")
            elif keyword == "ENV":
                env.update(pairs(instruction, variables))
            elif keyword == "RUN" and instruction.text.startswith("--"):
                option = instruction.text.split()[0].partition("=")[0]
                raise instruction.refuse(f"{option} is not supported by the rootfs builder")
            elif keyword in ("COPY", "ADD"):
                _, words = flags(instruction, ("chown", "chmod"))
                for source in words[:-1]:
                    remote = _remote(substitute(source, variables))
                    if remote is not None:
                        raise instruction.refuse(
                            f"of a remote source ({_short(remote)}) is not supported: "
                            "nothing is fetched here"
                        )
    except SandboxFailure as error:
        return str(error)
    return None

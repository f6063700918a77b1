"""What each provider refuses to build, said in one line naming the file and line at load."""

from __future__ import annotations

from pathlib import Path

import pytest

from palaestra.sandbox.machines.docker import DockerProvider, from_images
from palaestra.sandbox.machines.dockerfile import resolve, scan
from palaestra.sandbox.machines.rootfs import RootfsProvider


def _context(tmp_path: Path, dockerfile: str) -> Path:
    (tmp_path / "Dockerfile").write_text(dockerfile)
    return tmp_path


FETCHED = [
    ("ADD http://127.0.0.1:8000/a /a\n", "ADD of http://127.0.0.1:8000/a"),
    ("ADD https://example.org/x.tgz /x\n", "ADD of https://example.org/x.tgz"),
    ("ADD ftp://files.example/x /x\n", "ADD of ftp://files.example/x"),
    ('ADD ["http\\u003a//127.0.0.1/a", "/a"]\n', "ADD of http://127.0.0.1/a"),
    ('ADD "h"ttp://127.0.0.1/a /a\n', "ADD of http://127.0.0.1/a"),
    ("ADD\thttp://127.0.0.1/a /a\n", "ADD of http://127.0.0.1/a"),
    ("ADD htt\\\np://127.0.0.1/a /a\n", "ADD of http://127.0.0.1/a"),
    ("ADD git@github.com:owner/repo /src\n", "ADD of git@github.com:owner/repo"),
    ("ADD git://example.org/repo /src\n", "ADD of git://example.org/repo"),
    ("ADD ./vendored.git /src\n", "ADD of ./vendored.git"),
    ("ADD --checksum=sha256:00 a /a\n", "ADD --checksum"),
    ("ADD --keep-git-dir=true a /a\n", "ADD --keep-git-dir"),
    ("ARG U=http://127.0.0.1:9/\nADD $U /x\n", "ADD of http://127.0.0.1:9/"),
    ("ENV H=127.0.0.1\nADD http://${H}/a /a\n", "ADD of http://127.0.0.1/a"),
    ("ARG U\nADD $U /x\n", "ADD $U /x: a variable here has no value"),
    ("ADD $HOME/x /x\n", "ADD $HOME/x /x: a variable here has no value"),
    ("ARG HTTP_PROXY=a\nADD ${HTTP_PROXY} /x\n", "ADD ${HTTP_PROXY} /x: a variable"),
    ("COPY --from=alpine:3 /bin/busybox /b\n", "COPY --from=alpine:3: names no earlier stage"),
    ("RUN --mount=type=bind,from=alpine,target=/m true\n", "RUN --mount from=alpine: names"),
    ("RUN --network=host true\n", "RUN --network=host"),
    ("ONBUILD ADD http://127.0.0.1/a /a\n", "ONBUILD ADD of http://127.0.0.1/a"),
    ("ONBUILD ADD $X /a\n", "ONBUILD ADD $X /a: a variable"),
]


@pytest.mark.parametrize(("steps", "message"), FETCHED)
def test_what_the_docker_daemon_would_fetch_is_refused_naming_file_and_line(
    tmp_path: Path, steps: str, message: str
) -> None:
    context = _context(tmp_path, f"FROM debian:bookworm-slim\n{steps}")
    last = 1 + steps.count("\n")
    refused = DockerProvider.refusal(context)
    assert refused is not None and "\n" not in refused
    line = last - 1 if "\\\n" in steps else last  # a continued instruction: its first line
    assert refused.startswith(f"{context / 'Dockerfile'}:{line}: {message}"), refused


def test_a_directive_changing_the_escape_character_cannot_hide_an_add(tmp_path: Path) -> None:
    hidden = "# escape=`\nFROM debian:bookworm-slim\nRUN echo \\\nADD http://127.0.0.1/ /x\n"
    refused = DockerProvider.refusal(_context(tmp_path, hidden))
    assert refused is not None and ":4: ADD of http://127.0.0.1/" in refused
    assert [step.keyword for step in scan(hidden).instructions] == ["FROM", "RUN", "ADD"]
    continued = scan("# escape=`\nFROM a\nRUN echo \\ `\n  two\n").instructions[1]
    assert (continued.line, continued.text) == (3, "echo \\   two")  # joined as Docker joins


def test_what_the_daemon_builds_from_local_files_and_earlier_stages_is_accepted(
    tmp_path: Path,
) -> None:
    context = _context(
        tmp_path,
        "FROM debian:bookworm-slim AS Build\nARG V=1\nENV DIR=/opt\n"
        "ADD --chown=1:1 notes-$V.txt ${DIR}/\nRUN echo http://example.org\n"
        "ONBUILD RUN make\nFROM build\nCOPY --from=Build /opt /opt2\nCOPY --from=0 /opt /opt3\n"
        "ADD ${DIR:-/x}/file /y\n",
    )
    assert DockerProvider.refusal(context) is None


def test_a_folder_without_a_dockerfile_is_refused(tmp_path: Path) -> None:
    assert DockerProvider.refusal(tmp_path) == f"{tmp_path} has no Dockerfile"
    assert RootfsProvider.refusal(tmp_path) == f"{tmp_path} has no Dockerfile"


ROOTFS_REFUSED = [
    ("FROM debian:bookworm-slim AS a\nFROM a\n", ":2: FROM again: multi-stage"),
    ("FROM debian:bookworm-slim\nONBUILD RUN x\n", ":2: ONBUILD is not supported"),
    ("FROM debian:bookworm-slim\nRUN --mount=type=cache,target=/c true\n", ":2: RUN --mount is"),
    ("FROM debian:bookworm-slim\nADD http://127.0.0.1/a /a\n", ":2: ADD of a remote source"),
    ("FROM debian:bookworm-slim\nHEALTHCHEK CMD true\n", ":2: HEALTHCHEK is not supported"),
    ("FROM debian:bookworm-slim\nCOPY --from=x a b\n", ":2: COPY --from is not supported"),
    ("FROM python:3.12\n", ":1: FROM python:3.12: only the offline Debian base"),
    ("# escape=`\nFROM debian:bookworm-slim\n", ":1: the escape directive '`' is not"),
]


@pytest.mark.parametrize(("dockerfile", "message"), ROOTFS_REFUSED)
def test_what_the_rootfs_builder_cannot_build_is_refused_at_load(
    tmp_path: Path, dockerfile: str, message: str
) -> None:
    context = _context(tmp_path, dockerfile)
    refused = RootfsProvider.refusal(context)
    assert refused is not None and "\n" not in refused
    assert refused.startswith(f"{context / 'Dockerfile'}{message}"), refused


def test_the_rootfs_builder_accepts_its_subset(tmp_path: Path) -> None:
    context = _context(
        tmp_path,
        "FROM debian:bookworm-slim\nARG V=1\nCOPY --chown=1:1 a-$V /a\nRUN echo \\\n  ok\n"
        'CMD ["bash"]\n',
    )
    assert RootfsProvider.refusal(context) is None


def test_variables_are_resolved_only_when_the_dockerfile_fixes_them() -> None:
    known: dict[str, str | None] = {"A": "1", "EMPTY": "", "UNSET": None}
    text = "$A-${A}-${EMPTY:-d}-${A:+w}-${EMPTY:+w}-${EMPTY-d}-$"
    assert resolve(text, known) == "1-1-d-w---$"
    assert resolve("$UNSET", known) is None
    assert resolve("${MISSING:-x}", known) is None
    assert resolve("${A#1}", known) is None  # a form not read here is not guessed
    assert resolve("${A", known) is None


def test_from_images_names_the_images_not_the_stages() -> None:
    dockerfile = (
        "ARG BASE=debian:bookworm-slim\nFROM --platform=linux/amd64 ${BASE} AS build\n"
        "FROM\tbuild\nFROM scratch\n"
    )
    assert from_images(dockerfile) == ["debian:bookworm-slim"]

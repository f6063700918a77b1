"""Reading a Dockerfile: the subset the rootfs builder builds, the rest refused in one line."""

from __future__ import annotations

import pytest

from palaestra.errors import SandboxFailure
from palaestra.sandbox.machines.dockerfile import flags, pairs, parse, substitute


def test_continuations_comments_and_the_exec_form_are_read() -> None:
    steps = parse(
        "# syntax comment\nFROM debian:bookworm-slim\n\nRUN apt-get update \\\n"
        "    # a comment inside\n    && apt-get install -y jq\n"
        'RUN ["python3", "-c", "print(1)"]\ncmd ["bash"]\n'
    )
    assert [(s.keyword, s.line) for s in steps] == [("FROM", 2), ("RUN", 4), ("RUN", 7), ("CMD", 8)]
    assert steps[1].text == "apt-get update     && apt-get install -y jq"  # as Docker joins it
    assert steps[1].exec_form() is None
    assert steps[2].exec_form() == ["python3", "-c", "print(1)"]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "FROM debian:bookworm-slim\nONBUILD RUN x\n",
            "task/Dockerfile:2: ONBUILD is not supported",
        ),
        ("FROM a AS b\nFROM debian:bookworm-slim\n", "task/Dockerfile:2: FROM again: multi-stage"),
        ("RUN true\n", "task/Dockerfile: a Dockerfile must start with FROM"),
    ],
)
def test_what_is_not_built_is_refused_naming_file_line_and_instruction(
    source: str, message: str
) -> None:
    with pytest.raises(SandboxFailure) as caught:
        parse(source, "task/Dockerfile")
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_variables_pairs_and_flags() -> None:
    variables = {"A": "1", "EMPTY": ""}
    assert substitute("$A-${A}-${B:-dflt}-${EMPTY:-e}-$B.", variables) == "1-1-dflt-e-."
    env, arg, old = parse(
        'FROM debian:12\nENV X="a b" Y=$A\nARG NAME\nENV OLD value with spaces\n'
    )[1:]
    assert pairs(env, variables) == [("X", "a b"), ("Y", "1")]
    assert pairs(arg, variables) == [("NAME", "")]
    assert pairs(old, variables) == [("OLD", "value with spaces")]
    copy = parse("FROM debian:12\nCOPY --chown=agent:agent a b /dst/\n")[1]
    assert flags(copy, ("chown", "chmod")) == ({"chown": "agent:agent"}, ["a", "b", "/dst/"])
    with pytest.raises(SandboxFailure, match="--from is not supported"):
        flags(parse("FROM debian:12\nCOPY --from=build a b\n")[1], ("chown", "chmod"))

"""Keyword arguments typed as text become what the constructor's annotation asks for, or one
``ConfigError`` line naming the argument, the value and what it takes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pytest

from palaestra._util.arguments import call_with, effective_keywords
from palaestra.errors import ConfigError
from palaestra.sandbox.runner import Sandbox


class Made:
    """A constructor of every kind of parameter a user may type."""

    def __init__(
        self,
        names: tuple[str, ...] = ("a",),
        sizes: Sequence[int] = (),
        tags: list[str] | None = None,
        strict: bool = False,
        count: int = 1,
        scale: float = 1.0,
        label: str = "",
        mode: Literal["fast", "slow"] = "fast",
        weights: Mapping[str, float] | None = None,
        where: Path | None = None,
        sandbox: Sandbox | None = None,
        anything: Any = None,
    ) -> None:
        self.given = dict(locals())
        del self.given["self"]


def made(**given: Any) -> dict[str, Any]:
    return call_with(Made, given, "environment 'made'").given


def test_a_sequence_parameter_takes_comma_separated_text_item_by_item() -> None:
    assert made(names="simple_python, multiple")["names"] == ("simple_python", "multiple")
    assert made(names="simple")["names"] == ("simple",)
    assert made(sizes="1,2,3")["sizes"] == [1, 2, 3]
    assert made(tags="x,y")["tags"] == ["x", "y"]


def test_booleans_numbers_choices_and_json_objects_are_read_from_their_text() -> None:
    got = made(
        strict="false",
        count="7",
        scale="0.5",
        mode="slow",
        weights='{"gcd": 2}',
        where="a/b",
    )
    assert got["strict"] is False and got["count"] == 7 and got["scale"] == 0.5
    assert got["mode"] == "slow" and got["weights"] == {"gcd": 2} and got["where"] == Path("a/b")
    assert made(strict=1)["strict"] is True


def test_a_text_parameter_keeps_the_text_and_a_number_given_to_it_becomes_text() -> None:
    assert made(label="3,4")["label"] == "3,4"
    assert made(label=12)["label"] == "12"
    assert made(label=True)["label"] == "true"


def test_values_given_from_python_pass_as_they_are() -> None:
    names = ("x",)
    assert made(names=names)["names"] is names
    assert made(anything="text")["anything"] == "text"


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"strict": "maybe"}, "argument 'strict' takes true or false, not 'maybe'"),
        ({"count": "many"}, "argument 'count' takes an integer, not 'many'"),
        ({"mode": "fastest"}, "argument 'mode' takes one of fast, slow, not 'fastest'"),
        ({"weights": "gcd"}, "argument 'weights' takes a JSON object"),
        ({"sizes": "1,x"}, "argument 'sizes' takes an integer, not '1,x'"),
        ({"sandbox": "docker"}, "argument 'sandbox' takes a Sandbox object given from Python"),
    ],
)
def test_text_that_cannot_be_the_parameters_type_is_one_line_naming_it(
    given: dict[str, Any], says: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        made(**given)
    assert str(refused.value).startswith("environment 'made': ")
    assert says in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_runs_identity_records_the_typed_values() -> None:
    assert effective_keywords(Made, {"names": "a,b", "count": "2"})["names"] == ("a", "b")
    assert effective_keywords(Made, {"names": "a,b", "count": "2"})["count"] == 2

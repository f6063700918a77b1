from __future__ import annotations

import pytest

from palaestra import Environment, Session, tool
from palaestra.environment.tools import parse_docstring
from palaestra.errors import ConfigError


class Shop(Environment):
    """A shop."""

    @tool
    def buy(self, session: Session, item: str, quantity: int = 1, gift: bool = False) -> str:
        """Buy an item.

        Longer explanation that is not the summary.

        Args:
            item: The item's name.
            quantity: How many to buy;
                at least one.
            gift: Wrap it.

        Returns:
            A receipt.
        """
        return f"{quantity} {item}"

    @tool(name="look")
    async def inspect_item(self, item: str) -> dict[str, str]:
        """Look at an item."""
        return {"item": item}

    def verify(self, session: Session, response: dict[str, object]) -> float:
        return 0.0


def test_schema_comes_from_type_hints_and_docstring() -> None:
    schema = Shop.tool_specs["buy"].schema()
    assert schema["type"] == "function"
    assert schema["name"] == "buy"
    assert schema["description"] == "Buy an item."
    params = schema["parameters"]
    assert params["required"] == ["item"]
    assert params["additionalProperties"] is False
    assert params["properties"]["item"] == {"type": "string", "description": "The item's name."}
    assert params["properties"]["quantity"]["type"] == "integer"
    assert params["properties"]["quantity"]["default"] == 1
    assert params["properties"]["quantity"]["description"] == "How many to buy; at least one."
    assert "session" not in params["properties"]
    assert schema["strict"] is False  # optional parameters exist


def test_tool_name_override_and_strict_when_all_required() -> None:
    spec = Shop.tool_specs["look"]
    assert spec.is_async
    assert not spec.wants_session
    assert spec.schema()["strict"] is True
    assert [t["name"] for t in Shop().tools()] == ["buy", "look"]


def test_arguments_are_validated_before_the_tool_runs() -> None:
    model = Shop.tool_specs["buy"].arguments
    assert model.model_validate({"item": "pen", "quantity": "3"}).quantity == 3  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="quantity"):
        model.model_validate({"item": "pen", "quantity": "many"})
    with pytest.raises(ValueError, match="unexpected"):
        model.model_validate({"item": "pen", "unexpected": 1})


def test_untyped_tool_parameter_is_refused_at_class_definition() -> None:
    with pytest.raises(TypeError, match="needs a type hint"):

        class Bad(Environment):
            @tool
            def oops(self, thing) -> str:  # type: ignore[no-untyped-def]
                return str(thing)


def test_defaults_for_name_and_description() -> None:
    assert Shop.name == "shop"
    assert Shop.description == "A shop."


def test_parse_docstring_handles_typed_args_and_sections() -> None:
    summary, args = parse_docstring(
        "Do it.\n\nArgs:\n    a (int): first\n    b: second\n        continued\nRaises:\n    X: no"
    )
    assert summary == "Do it."
    assert args == {"a": "first", "b": "second continued"}


SEEDING_TOOL = '''
from palaestra import Environment, tool


class Seeder(Environment):
    """Plants seeds."""

    @tool
    def seed_session(self, plant: str) -> str:
        """Plant a seed.

        Args:
            plant: What to plant.
        """
        return plant

    def verify(self, session, response):
        return 1.0
'''
REFUSAL = "Seeder.seed_session: the tool name 'seed_session' is reserved"


def test_a_tool_named_like_a_protocol_route_is_refused_where_its_class_is_defined() -> None:
    with pytest.raises(ConfigError) as refused:
        exec(SEEDING_TOOL, {"__name__": "scratch"})  # before: defined, and served a traceback
    message = str(refused.value)
    assert message.startswith(REFUSAL) and "\n" not in message
    assert "@tool(name=...)" in message


def test_a_tool_renamed_onto_a_route_is_refused_naming_its_method_and_the_route() -> None:
    with pytest.raises(ConfigError, match=r"^Judge\.check: the tool name 'verify' is reserved"):

        class Judge(Environment):
            @tool(name="verify")
            def check(self, answer: str) -> str:
                """Check an answer."""
                return answer


def test_a_tool_whose_name_only_contains_a_route_is_still_a_tool() -> None:
    class Planter(Environment):
        @tool
        def verify_seed_session(self, plant: str) -> str:
            """Check a planted seed."""
            return plant

    assert list(Planter.tool_specs) == ["verify_seed_session"]

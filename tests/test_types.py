"""The public vocabulary's item builders."""

from __future__ import annotations

from palaestra.types import function_call_output


def test_a_tool_output_item_has_an_id_of_its_own_from_the_start() -> None:
    first, second = function_call_output("call_1", "12 C"), function_call_output("call_1", "13 C")
    assert first["id"].startswith("fco_") and first["id"] != second["id"]
    assert list(first) == ["call_id", "output", "type", "id", "status"]  # NeMo Gym's order

"""How a run's parts are put together (``palaestra.collection.assembly``)."""

from __future__ import annotations

import pytest

from palaestra.collection.assembly import model_for
from palaestra.spec import ModelConfig

LOCAL = ModelConfig(backend="local")


@pytest.mark.parametrize("agent", ["command", "mini_swe_agent", "openhands"])
def test_a_harness_agent_runs_the_embedded_model_in_token_mode(agent: str) -> None:
    assert model_for(LOCAL, agent).options == {"token_mode": True}


@pytest.mark.parametrize("options", [{"token_mode": False}, {"return_tokens": True}])
def test_token_options_the_user_gave_are_kept_for_a_harness(options: dict[str, bool]) -> None:
    given = LOCAL.model_copy(update={"options": options})
    assert model_for(given, "mini_swe_agent").options == options


@pytest.mark.parametrize("agent", [None, "tool_calling", "single_turn"])
def test_other_agents_run_the_model_as_configured(agent: str | None) -> None:
    assert model_for(LOCAL, agent).options == {}


def test_a_served_model_is_left_as_configured_for_a_harness() -> None:
    served = ModelConfig(url="http://127.0.0.1:8000/v1")
    assert model_for(served, "mini_swe_agent") == served

"""weather: one tool, reward always 1. The wiring demo (NeMo Gym's example_single_tool_call)."""

from __future__ import annotations

from palaestra import Environment, JsonDict, Session, Verdict, function_calls, tool


class Weather(Environment):
    """One weather tool and a reward of 1 for every finished rollout: a wiring demo."""

    name = "weather"

    # async def: trivially cheap code stays on the event loop, without a worker-thread hop
    # (plain methods run in a thread so that a slow one cannot stall other rollouts).
    @tool
    async def get_weather(self, city: str) -> JsonDict:
        """Get the current weather in a city.

        Args:
            city: The name of the city, e.g. "San Francisco".
        """
        return {"city": city, "weather_description": f"The weather in {city} is cold."}

    async def verify(self, session: Session, response: JsonDict) -> Verdict:
        called = any(call.get("name") == "get_weather" for call in function_calls(response))
        return Verdict(reward=1.0, metrics={"called_tool": called})

"""counter: per-session state. Increment and read a counter; reward when the final value matches."""

from __future__ import annotations

from palaestra import Environment, JsonDict, Session, Verdict, tool


class Counter(Environment):
    """A per-rollout counter to increment and read; reward when the final value is the target."""

    name = "counter"

    def seed(self, task: JsonDict) -> JsonDict:
        return {"value": int(task.get("initial_value", 0))}

    @tool
    def increment(self, session: Session, amount: int = 1) -> int:
        """Add an amount to the counter and return the new value.

        Args:
            amount: How much to add (may be negative).
        """
        session.state["value"] += amount
        return int(session.state["value"])

    @tool
    def read_counter(self, session: Session) -> int:
        """Return the current value of the counter."""
        return int(session.state["value"])

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        final = session.state["value"]
        target = int(session.task["target_value"])
        return Verdict(
            reward=1.0 if final == target else 0.0,
            metrics={"final_value": final, "distance": abs(final - target)},
        )

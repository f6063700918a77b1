"""Turn-based environments with a reset/step protocol (Gymnasium-style).

The model's action each turn is its plain text answer; the environment answers with the next
observation, a per-step reward and whether the episode is over::

    class Guess(StepEnvironment):
        def reset(self, session: Session) -> str:
            session.state = {"target": session.task["target"]}
            return "Guess a number from 1 to 100."

        def step(self, session: Session, action: str) -> StepResult:
            ...
            return StepResult("higher", reward=0.0, terminated=False)

Run it with the ``step`` agent (the default agent of every ``StepEnvironment``). Observations
enter the trajectory as ``role: user`` messages, so a trainer's assistant-token mask never
covers them; per-step rewards land in the rollout's ``step_rewards``. A simulated user is the
same pattern: ``step`` answers the assistant's turn as the user would.
"""

from __future__ import annotations

from typing import ClassVar

from palaestra.environment.base import Environment
from palaestra.environment.sessions import Session
from palaestra.types import JsonDict, StepResult, Verdict


class StepEnvironment(Environment):
    """Base of turn-based environments: implement ``reset`` and ``step``; ``verify`` is optional.

    The default ``verify`` gives the sum of the step rewards the session recorded.
    """

    default_agent: ClassVar[str] = "step"

    def reset(self, session: Session) -> str:
        """Start the episode of ``session.task``; return the first observation."""
        raise NotImplementedError(f"{type(self).__name__} must implement reset()")

    def step(self, session: Session, action: str) -> StepResult:
        """Apply the model's ``action`` (its text); return what follows."""
        raise NotImplementedError(f"{type(self).__name__} must implement step()")

    def verify(self, session: Session, response: JsonDict) -> Verdict | float:
        return Verdict(reward=sum(session.step_rewards), step_rewards=list(session.step_rewards))

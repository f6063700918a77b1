"""number_guess: a turn-based text game on the reset/step protocol, with per-step rewards."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

from palaestra import JsonDict, Session, StepEnvironment, StepResult, Verdict, task_row

_NUMBER = re.compile(r"-?\d+")
SYSTEM = (
    "We play a game. I think of a whole number; you guess it. After each guess I say whether "
    "the number is higher or lower. Answer with just your guess, a single number."
)


class NumberGuess(StepEnvironment):
    """Guess the hidden number from higher/lower hints; reward 1 when found, per-step rewards."""

    name = "number_guess"

    def reset(self, session: Session) -> str:
        low, high = int(session.task["low"]), int(session.task["high"])
        session.state = {"target": int(session.task["target"]), "guesses": []}
        return f"I am thinking of a number from {low} to {high}. Your guess?"

    def step(self, session: Session, action: str) -> StepResult:
        match = _NUMBER.search(action)
        if match is None:
            return StepResult("That is not a number. Answer with a single number.")
        guess = int(match.group())
        session.state["guesses"].append(guess)
        target = session.state["target"]
        if guess == target:
            return StepResult(f"{guess} is right!", reward=1.0, terminated=True)
        return StepResult(
            f"{guess} is wrong: my number is {'higher' if target > guess else 'lower'}."
        )

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        guesses = session.state["guesses"] if isinstance(session.state, dict) else []
        solved = bool(guesses) and guesses[-1] == session.task["target"]
        return Verdict(
            reward=1.0 if solved else 0.0,
            step_rewards=list(session.step_rewards),
            metrics={"guesses": len(guesses), "solved": solved},
        )

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        rng = random.Random(seed)
        for _ in range(count):
            high = rng.choice([10, 20, 50, 100])
            yield task(low=1, high=high, target=rng.randint(1, high))


def task(*, low: int, high: int, target: int) -> JsonDict:
    return task_row(None, system=SYSTEM, low=low, high=high, target=target)

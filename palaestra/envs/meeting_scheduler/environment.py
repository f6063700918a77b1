"""meeting_scheduler: a multi-turn negotiation with a simulated user who reveals constraints.

The simulated user is the environment's ``step``: it answers each assistant turn as a person
would, revealing one unmet constraint at a time. Its turns are ``role: user`` messages in the
trajectory, so trainers never train on them.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

from palaestra import JsonDict, Session, StepEnvironment, StepResult, Verdict, task_row

DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday")
_DAY = re.compile(r"\b(mon|tue|wed|thu|fri)[a-z]*\b", re.IGNORECASE)
_TIME = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(am|pm)?\b", re.IGNORECASE)
SYSTEM = (
    "You are a scheduling assistant. Find a one-hour meeting slot next week (Monday to Friday, "
    "starting on the hour) that suits the user. Propose one day and start time per message, "
    "for example 'How about Tuesday at 14:00?'."
)
OPENING = "Hi! Can you find a one-hour slot for our meeting next week? Please propose a time."


class MeetingScheduler(StepEnvironment):
    """Schedule a meeting with a simulated user who reveals constraints turn by turn."""

    name = "meeting_scheduler"

    def reset(self, session: Session) -> str:
        session.state = {"revealed": [], "accepted": None, "proposals": 0}
        return OPENING

    def step(self, session: Session, action: str) -> StepResult:
        slot = parse_slot(action)
        if slot is None:
            return StepResult(
                "Please propose one specific day and start time, like 'Tuesday at 14:00'."
            )
        session.state["proposals"] += 1
        problem = first_problem(session.task["constraints"], *slot)
        if problem is None:
            session.state["accepted"] = list(slot)
            return StepResult(
                f"{slot[0].title()} at {slot[1]}:00 works for me. Booked, thanks!",
                reward=1.0,
                terminated=True,
            )
        name, reply = problem
        if name not in session.state["revealed"]:
            session.state["revealed"].append(name)
        return StepResult(reply)

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        state = session.state if isinstance(session.state, dict) else {}
        accepted = state.get("accepted")
        ok = accepted is not None and first_problem(session.task["constraints"], *accepted) is None
        return Verdict(
            reward=1.0 if ok else 0.0,
            step_rewards=list(session.step_rewards),
            metrics={
                "proposals": state.get("proposals", 0),
                "constraints_revealed": len(state.get("revealed", [])),
            },
        )

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        rng = random.Random(seed)
        for _ in range(count):
            days = sorted(rng.sample(DAYS, rng.randint(1, 3)), key=DAYS.index)
            earliest = rng.randint(9, 14)
            latest = rng.randint(earliest, 16)
            blocked = [rng.choice(days), rng.randint(earliest, latest)]
            if latest == earliest and len(days) == 1:
                blocked = []  # keep one slot open
            yield task(
                {"days": days, "earliest": earliest, "latest_start": latest, "blocked": blocked}
            )


def task(constraints: JsonDict) -> JsonDict:
    return task_row(None, system=SYSTEM, constraints=constraints)


def parse_slot(text: str) -> tuple[str, int] | None:
    """The (day, start hour) a message proposes, if it names exactly one of each."""
    day = _DAY.search(text)
    time = _TIME.search(text[day.end() :] if day else text)
    if day is None or time is None or (time.group(2) not in (None, "00")):
        return None
    hour = int(time.group(1))
    suffix = (time.group(3) or "").lower()
    if suffix == "pm" and hour < 12:
        hour += 12
    if suffix == "am" and hour == 12:
        hour = 0
    full_day = next(d for d in DAYS if d.startswith(day.group(1).lower()))
    return full_day, hour


def first_problem(constraints: JsonDict, day: str, hour: int) -> tuple[str, str] | None:
    """The first constraint a slot breaks, with the user's reply; None when it fits."""
    if day not in constraints["days"]:
        allowed = " or ".join(d.title() for d in constraints["days"])
        return "days", f"I can't do {day.title()}. I'm only free on {allowed}."
    if not constraints["earliest"] <= hour <= constraints["latest_start"]:
        return "hours", (
            f"That time doesn't work. I can start between "
            f"{constraints['earliest']}:00 and {constraints['latest_start']}:00."
        )
    if constraints.get("blocked") == [day, hour]:
        return "blocked", f"I already have a meeting on {day.title()} at {hour}:00."
    return None

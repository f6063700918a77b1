"""Workplace tasks: requests made from templates over a seeded office, each with its gold calls.

A scenario reads the office's rows, picks what the request is about so that it names exactly
one thing (a unique sender and subject, a unique meeting title on a day, ...), and returns the
request and the state-changing calls that fulfil it. ``None``: not possible in this office.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from palaestra import JsonDict, task_row
from palaestra.envs.workplace.scenarios import mail
from palaestra.envs.workplace.scenarios import office as office_scenarios
from palaestra.envs.workplace.scenarios.base import Scenario
from palaestra.envs.workplace.store import USER_EMAIL, USER_NAME, Office, office

SCENARIOS: dict[str, Scenario] = {
    s.__name__: s
    for s in (
        mail.reply_latest,
        mail.archive_from,
        mail.mark_read_from,
        mail.delete_email,
        mail.forward_email,
        mail.send_email,
        office_scenarios.schedule_meeting,
        office_scenarios.first_free_slot,
        office_scenarios.reschedule,
        office_scenarios.cancel_and_notify,
        office_scenarios.add_attendee,
        office_scenarios.deal_stage,
        office_scenarios.new_phone,
        office_scenarios.new_deal,
        office_scenarios.follow_up,
        office_scenarios.log_note,
        office_scenarios.complete_todo,
        office_scenarios.churn,
    )
}
"""Scenario name -> scenario; the name is a task's ``scenario`` field."""


def system_prompt(o: Office) -> str:
    return (
        f"You are the assistant of {USER_NAME} ({USER_EMAIL}) at Brightline. Today is "
        f"{o.today:%A}, {o.today.isoformat()}. Do what {USER_NAME.split()[0]} asks with the "
        "tools: look things up first, then make exactly the changes asked for and no others. "
        "When everything is done, say so in one sentence."
    )


def make_task(office_seed: int, scenario: str, rng: random.Random) -> JsonDict | None:
    o = office(office_seed)
    made = SCENARIOS[scenario](rng, o)
    if made is None:
        return None
    request, calls = made
    return task_row(
        request,
        system=system_prompt(o),
        office_seed=office_seed,
        scenario=scenario,
        gold_calls=calls,
    )


def generate(count: int, seed: int) -> Iterator[JsonDict]:
    """``count`` tasks, the scenarios in turn, each over its own office drawn from ``seed``."""
    rng = random.Random(seed)
    order = sorted(SCENARIOS)
    rng.shuffle(order)
    for index in range(count):
        scenario = order[index % len(order)]
        for _ in range(100):  # a scenario fits most offices; try others until one fits
            task = make_task(rng.randrange(2**31), scenario, rng)
            if task is not None:
                yield task
                break
        else:
            raise RuntimeError(f"scenario {scenario} fits none of 100 offices")

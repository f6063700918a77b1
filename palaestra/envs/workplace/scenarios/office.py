"""Calendar, to-do and CRM scenarios."""

from __future__ import annotations

import datetime
import random
from collections import Counter

from palaestra import JsonDict
from palaestra.envs.workplace.scenarios.base import Made, gold, names, records
from palaestra.envs.workplace.schedule import free_slots
from palaestra.envs.workplace.store import PRODUCTS, Office


def _workday(rng: random.Random, o: Office) -> str:
    day = o.today + datetime.timedelta(days=rng.randrange(1, 10))
    while day.weekday() >= 5:
        day += datetime.timedelta(days=1)
    return day.isoformat()


def schedule_meeting(rng: random.Random, o: Office) -> Made:
    colleague = rng.choice(records(o, "employees"))
    company = rng.choice(records(o, "customers"))["company"]
    title, day = f"Kick-off with {company}", _workday(rng, o)
    start, minutes = f"{rng.randrange(9, 16):02d}:{rng.choice(('00', '30'))}", rng.choice((30, 60))
    return (
        f'Schedule a {minutes}-minute meeting called "{title}" with {colleague["name"]} on '
        f"{day} at {start}.",
        [
            gold(
                "create_event",
                title=title,
                date=day,
                start_time=start,
                duration_minutes=minutes,
                attendees=[colleague["email"]],
            )
        ],
    )


def first_free_slot(rng: random.Random, o: Office) -> Made:
    colleague, day = rng.choice(records(o, "employees")), _workday(rng, o)
    busy = [
        (str(e["start_time"]), int(str(e["duration_minutes"])))
        for e in records(o, "events")
        if e["date"] == day and e["status"] == "scheduled"
    ]
    slots = free_slots(busy, 60)
    if not slots:
        return None
    return (
        f'On {day}, book a 60-minute "Planning session" with {colleague["name"]} at the '
        "earliest time I am free (between 09:00 and 17:00, starting on the hour or half hour).",
        [
            gold(
                "create_event",
                title="Planning session",
                date=day,
                start_time=slots[0],
                duration_minutes=60,
                attendees=[colleague["email"]],
            )
        ],
    )


def _upcoming_event(rng: random.Random, o: Office) -> JsonDict | None:
    events = [e for e in records(o, "events") if str(e["date"]) >= o.today.isoformat()]
    return rng.choice(events) if events else None


def reschedule(rng: random.Random, o: Office) -> Made:
    event = _upcoming_event(rng, o)
    start = f"{rng.randrange(9, 17):02d}:{rng.choice(('00', '30'))}"
    if event is None or start == event["start_time"]:
        return None
    return (
        f'Move the "{event["title"]}" meeting on {event["date"]} to {start} the same day.',
        [gold("reschedule_event", event_id=event["id"], date=event["date"], start_time=start)],
    )


def cancel_and_notify(rng: random.Random, o: Office) -> Made:
    event = _upcoming_event(rng, o)
    if event is None:
        return None
    attendee = str(event["attendees"]).split(",")[0]
    subject = f"Cancelled: {event['title']}"
    return (
        f'Cancel the "{event["title"]}" meeting on {event["date"]}, then email '
        f'{names(o)[attendee]} with the subject "{subject}" to let them know.',
        [
            gold("cancel_event", event_id=event["id"]),
            gold("send_email", to=[attendee], subject=subject, body="The meeting is cancelled."),
        ],
    )


def add_attendee(rng: random.Random, o: Office) -> Made:
    event = _upcoming_event(rng, o)
    colleague = rng.choice(records(o, "employees"))
    if event is None or str(colleague["email"]) in str(event["attendees"]).split(","):
        return None
    return (
        f'Add my colleague {colleague["name"]} to the "{event["title"]}" meeting on '
        f"{event['date']}.",
        [gold("add_attendee", event_id=event["id"], email=colleague["email"])],
    )


def deal_stage(rng: random.Random, o: Office) -> Made:
    deals = records(o, "deals")
    counts = Counter(d["title"] for d in deals)
    unique = [d for d in deals if counts[d["title"]] == 1]
    if not unique:
        return None
    deal = rng.choice(unique)
    stage = rng.choice([s for s in ("proposal", "negotiation", "won") if s != deal["stage"]])
    return (
        f'The "{deal["title"]}" deal has moved to the {stage} stage. Update the CRM.',
        [gold("update_deal_stage", deal_id=deal["id"], stage=stage)],
    )


def new_phone(rng: random.Random, o: Office) -> Made:
    customer = rng.choice(records(o, "customers"))
    digits = f"{rng.randrange(100, 999)} {rng.randrange(1000, 9999)}"
    return (
        f"{customer['name']} from {customer['company']} has a new phone number: +1 555 {digits}. "
        "Update their customer record.",
        [
            gold(
                "update_customer",
                customer_id=customer["id"],
                phone=f"+1555{digits.replace(' ', '')}",
            )
        ],
    )


def new_deal(rng: random.Random, o: Office) -> Made:
    customer = rng.choice(records(o, "customers"))
    title = f"{customer['company']} {rng.choice(PRODUCTS)} renewal"
    amount = rng.randrange(5, 200) * 1000
    return (
        f'Open a new deal called "{title}" worth {amount} dollars for {customer["name"]} '
        f"({customer['company']}).",
        [gold("create_deal", customer_id=customer["id"], title=title, amount=amount)],
    )


def follow_up(rng: random.Random, o: Office) -> Made:
    customer = rng.choice(records(o, "customers"))
    title, day = f"Send proposal to {customer['name']}", _workday(rng, o)
    return (
        f'Add a to-do "{title}" due {day}, linked to {customer["name"]}\'s customer record '
        f"({customer['company']}).",
        [gold("create_todo", title=title, due_date=day, customer_id=customer["id"])],
    )


def log_note(rng: random.Random, o: Office) -> Made:
    customer = rng.choice(records(o, "customers"))
    note = rng.choice(("Asked for a discount on the renewal.", "Prefers calls after 14:00."))
    return (
        f"Add a note to the customer record of {customer['name']} ({customer['company']}): "
        f'"{note}"',
        [gold("add_note", customer_id=customer["id"], note=note)],
    )


def complete_todo(rng: random.Random, o: Office) -> Made:
    todos = records(o, "todos")
    counts = Counter((t["title"], t["due_date"]) for t in todos)
    open_ = [t for t in todos if not t["done"] and counts[(t["title"], t["due_date"])] == 1]
    if not open_:
        return None
    todo = rng.choice(open_)
    return (
        f'Mark my to-do "{todo["title"]}" due {todo["due_date"]} as done.',
        [gold("complete_todo", todo_id=todo["id"])],
    )


def churn(rng: random.Random, o: Office) -> Made:
    customer = rng.choice([c for c in records(o, "customers") if c["status"] != "churned"])
    deals = [
        d
        for d in records(o, "deals")
        if d["customer_id"] == customer["id"] and d["stage"] not in ("won", "lost")
    ]
    if not deals:
        return None
    return (
        f"{customer['name']} at {customer['company']} is leaving us. Set their status to "
        "churned and move each of their open deals (not won or lost) to lost.",
        [gold("update_customer", customer_id=customer["id"], status="churned")]
        + [gold("update_deal_stage", deal_id=d["id"], stage="lost") for d in deals],
    )

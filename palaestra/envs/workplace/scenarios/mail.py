"""Mail scenarios."""

from __future__ import annotations

import random
from collections import Counter

from palaestra import JsonDict
from palaestra.envs.workplace.scenarios.base import Made, gold, names, records
from palaestra.envs.workplace.store import Office

MESSAGES = (
    "I will send it by Friday",
    "thanks, this looks good",
    "can we talk about it tomorrow",
    "I am on it",
)


def _inbox_by_sender(o: Office) -> dict[str, list[JsonDict]]:
    found: dict[str, list[JsonDict]] = {}
    for email in records(o, "emails"):
        if email["folder"] == "inbox":
            found.setdefault(str(email["sender"]), []).append(email)
    return found


def _unique_inbox_email(rng: random.Random, o: Office) -> JsonDict | None:
    inbox = [e for e in records(o, "emails") if e["folder"] == "inbox"]
    counts = Counter((e["sender"], e["subject"]) for e in inbox)
    unique = [e for e in inbox if counts[(e["sender"], e["subject"])] == 1]
    return rng.choice(unique) if unique else None


def reply_latest(rng: random.Random, o: Office) -> Made:
    sender, emails = rng.choice(sorted(_inbox_by_sender(o).items()))
    latest = max(emails, key=lambda e: str(e["sent_at"]))
    message = rng.choice(MESSAGES)
    return (
        f"Reply to the most recent email in my inbox from {names(o)[sender]} and tell them "
        f'"{message}".',
        [gold("reply_to_email", email_id=latest["id"], body=message)],
    )


def archive_from(rng: random.Random, o: Office) -> Made:
    sender, emails = rng.choice(sorted(_inbox_by_sender(o).items()))
    return (
        f"Archive all the emails in my inbox from {names(o)[sender]}.",
        [gold("archive_email", email_id=e["id"]) for e in emails],
    )


def mark_read_from(rng: random.Random, o: Office) -> Made:
    unread = {s: [e for e in es if not e["is_read"]] for s, es in _inbox_by_sender(o).items()}
    choices = sorted((s, es) for s, es in unread.items() if es)
    if not choices:
        return None
    sender, emails = rng.choice(choices)
    return (
        f"Mark every unread email in my inbox from {names(o)[sender]} as read.",
        [gold("mark_email_read", email_id=e["id"], read=True) for e in emails],
    )


def delete_email(rng: random.Random, o: Office) -> Made:
    email = _unique_inbox_email(rng, o)
    if email is None:
        return None
    who = names(o)[str(email["sender"])]
    return (
        f'Delete the email "{email["subject"]}" from {who} in my inbox.',
        [gold("delete_email", email_id=email["id"])],
    )


def forward_email(rng: random.Random, o: Office) -> Made:
    email = _unique_inbox_email(rng, o)
    colleague = rng.choice(records(o, "employees"))
    if email is None or email["sender"] == colleague["email"]:
        return None
    who = names(o)[str(email["sender"])]
    return (
        f'Forward the email "{email["subject"]}" from {who} to my colleague {colleague["name"]}.',
        [gold("forward_email", email_id=email["id"], to=[colleague["email"]])],
    )


def send_email(rng: random.Random, o: Office) -> Made:
    colleague = rng.choice(records(o, "employees"))
    subject = rng.choice(("Status update", "Quick question", "Notes from today"))
    return (
        f'Email my colleague {colleague["name"]} with the subject "{subject}" and ask '
        "whether they have time this week.",
        [
            gold(
                "send_email",
                to=[colleague["email"]],
                subject=subject,
                body="Do you have time this week?",
            )
        ],
    )

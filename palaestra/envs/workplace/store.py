"""The office's data: a SQLite database of mail, calendar, to-dos and CRM, made from a seed.

``office(seed)`` is the rows as Python tuples (the scenario generator reads them);
``office_image(seed)`` is the same database serialized, built once per seed; ``open_copy``
gives a session its own writable in-memory copy. ``snapshot`` is what verification compares.
"""

from __future__ import annotations

import datetime
import functools
import random
import re
import sqlite3
from collections import Counter
from dataclasses import dataclass

Row = tuple[object, ...]

TABLES: dict[str, tuple[str, ...]] = {
    "employees": ("id", "name", "email", "title", "department"),
    "emails": (
        "id",
        "folder",
        "sender",
        "recipients",
        "subject",
        "body",
        "sent_at",
        "is_read",
        "refers_to",
    ),
    "events": ("id", "title", "date", "start_time", "duration_minutes", "attendees", "status"),
    "todos": ("id", "title", "due_date", "customer_id", "done"),
    "customers": ("id", "name", "company", "email", "phone", "status"),
    "deals": ("id", "customer_id", "title", "amount", "stage"),
    "notes": ("id", "customer_id", "text", "created_at"),
}
"""Table -> columns; ``id`` is an INTEGER PRIMARY KEY everywhere."""

COMPARED: dict[str, tuple[str, ...]] = {
    table: tuple(c for c in columns if c not in ("id", "body", "text"))
    for table, columns in TABLES.items()
}
"""The columns verification compares: not ids (new rows may be made in another order) and not
free text (an email's body, a note's text), which no exact comparison can judge."""

USER_NAME = "Alex Morgan"
USER_EMAIL = "alex.morgan@brightline.test"
STAGES = ("prospecting", "proposal", "negotiation", "won", "lost")
CUSTOMER_STATUSES = ("lead", "active", "churned")
FOLDERS = ("inbox", "archive", "sent", "trash")


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


FIRST = _words(
    "Aiko Bruno Chiara Darius Elena Farid Greta Hugo Imani Jakob Kenji Lena Marco Nia Oskar "
    "Petra Quentin Rhea Stefan Tova Ulrich Valeria Wen Xavier Yara Zane"
)
LAST = _words(
    "Achterberg Brennan Castell Dufour Engel Falk Gallo Horvat Ibsen Juarez Keller Lund "
    "Mbeki Nakamura Ortega Pires Rahman Sauer Thorne Umarov Vidal Wolff"
)
TITLES = ("Account Manager", "Engineer", "Designer", "Analyst", "Team Lead", "Recruiter")
DEPARTMENTS = ("Sales", "Engineering", "Design", "Finance", "People")
COMPANIES = (
    "Alder Logistics",
    "Bluefin Foods",
    "Cobalt Health",
    "Dunmore Energy",
    "Elmstead Retail",
    "Foxglove Media",
    "Granite Works",
    "Harbor Textiles",
    "Ironbark Labs",
    "Juniper Travel",
    "Kestrel Motors",
    "Larkspur Bank",
)
PRODUCTS = ("platform licence", "support plan", "pilot", "data add-on", "training package")
SUBJECTS = (
    "Quarterly numbers",
    "Contract draft",
    "Lunch on Friday?",
    "Invoice overdue",
    "Design review notes",
    "Hiring plan",
    "Travel booking",
    "Security training",
    "Roadmap questions",
    "Office move",
    "Renewal terms",
    "Workshop agenda",
)
MEETINGS = (
    "Budget review",
    "Sprint planning",
    "Customer demo",
    "One-on-one",
    "Design critique",
    "Pipeline review",
    "Vendor call",
    "Team retro",
)
_EMAIL = re.compile(r"^[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}$")


@dataclass(frozen=True, slots=True)
class Office:
    today: datetime.date
    tables: dict[str, list[Row]]


def _people(rng: random.Random, count: int) -> list[str]:
    return rng.sample([f"{f} {last}" for f in FIRST for last in LAST], count)


def _address(name: str, domain: str) -> str:
    return name.lower().replace(" ", ".") + "@" + domain


@functools.lru_cache(maxsize=64)
def office(seed: int) -> Office:
    """The office made from ``seed``: same seed, same rows."""
    rng = random.Random(seed)
    today = datetime.date(2024, 1, 8) + datetime.timedelta(days=rng.randrange(300))
    names = _people(rng, 45)
    employees: list[Row] = [
        (i, n, _address(n, "brightline.test"), rng.choice(TITLES), rng.choice(DEPARTMENTS))
        for i, n in enumerate(names[:18], start=1)
    ]
    customers: list[Row] = []
    for i, name in enumerate(names[18:], start=1):
        company = COMPANIES[(i - 1) % len(COMPANIES)]
        domain = company.split()[0].lower() + ".test"
        phone = f"+1555{rng.randrange(1_000_000, 9_999_999)}"
        customers.append(
            (i, name, company, _address(name, domain), phone, rng.choice(CUSTOMER_STATUSES))
        )
    deals: list[Row] = []
    for i, product in enumerate(rng.sample([(c, p) for c in customers for p in PRODUCTS], 34), 1):
        customer, kind = product
        title = f"{customer[2]} {kind}"
        deals.append((i, customer[0], title, rng.randrange(5, 250) * 1000, rng.choice(STAGES)))
    contacts = [(str(e[1]), str(e[2])) for e in employees] + [
        (str(c[1]), str(c[3])) for c in customers
    ]
    emails: list[Row] = []
    minutes = rng.sample(range(1, 14 * 24 * 60), 40)  # distinct times in the last two weeks
    for i, minute in enumerate(sorted(minutes, reverse=True), start=1):
        name, address = rng.choice(contacts[:30])
        stamp = datetime.datetime.combine(today, datetime.time(8)) - datetime.timedelta(
            minutes=minute
        )
        subject = rng.choice(SUBJECTS)
        folder = "archive" if rng.random() < 0.2 else "inbox"
        body = f"Hi Alex,\n\nA note about {subject.lower()}.\n\nBest,\n{name.split()[0]}"
        emails.append(
            (
                i,
                folder,
                address,
                USER_EMAIL,
                subject,
                body,
                stamp.isoformat(timespec="minutes"),
                int(rng.random() < 0.5),
                None,
            )
        )
    events: list[Row] = []
    used: set[tuple[str, str]] = set()
    while len(events) < 24:
        title = rng.choice(MEETINGS)
        day = (today + datetime.timedelta(days=rng.randrange(-3, 12))).isoformat()
        if (title, day) in used:
            continue
        used.add((title, day))
        attendees = sorted(a for _, a in rng.sample(contacts[:18], rng.randrange(1, 4)))
        start = f"{rng.randrange(9, 17):02d}:{rng.choice(('00', '30'))}"
        duration = rng.choice((30, 30, 60))
        events.append(
            (len(events) + 1, title, day, start, duration, ",".join(attendees), "scheduled")
        )
    todos: list[Row] = []
    for i in range(1, 11):
        customer = rng.choice(customers)
        due = (today + datetime.timedelta(days=rng.randrange(-2, 20))).isoformat()
        todos.append(
            (i, f"Follow up with {customer[2]}", due, customer[0], int(rng.random() < 0.3))
        )
    notes: list[Row] = [
        (i, rng.choice(customers)[0], "Called; interested in a renewal.", today.isoformat())
        for i in range(1, 6)
    ]
    tables = {
        "employees": employees,
        "emails": emails,
        "events": events,
        "todos": todos,
        "customers": customers,
        "deals": deals,
        "notes": notes,
    }
    return Office(today, tables)


@functools.lru_cache(maxsize=64)
def office_image(seed: int) -> bytes:
    """The office made from ``seed`` as a serialized SQLite database."""
    connection = sqlite3.connect(":memory:")
    try:
        for table, columns in TABLES.items():
            definition = ", ".join(["id INTEGER PRIMARY KEY", *columns[1:]])
            connection.execute(f"CREATE TABLE {table} ({definition})")
            marks = ", ".join("?" * len(columns))
            connection.executemany(
                f"INSERT INTO {table} VALUES ({marks})", office(seed).tables[table]
            )
        connection.commit()
        return connection.serialize()
    finally:
        connection.close()


def open_copy(seed: int) -> sqlite3.Connection:
    """A private, writable, in-memory copy of the office made from ``seed``."""
    connection = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    connection.deserialize(office_image(seed))
    return connection


def snapshot(connection: sqlite3.Connection) -> dict[str, Counter[tuple[object, ...]]]:
    """Every table as a multiset of its compared columns (text compared case-insensitively)."""
    state: dict[str, Counter[tuple[object, ...]]] = {}
    for table, columns in COMPARED.items():
        rows = connection.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall()
        state[table] = Counter(
            tuple(" ".join(v.casefold().split()) if isinstance(v, str) else v for v in row)
            for row in rows
        )
    return state


def valid_address(text: str) -> str | None:
    """An email address, lower-cased and stripped; None when it is not one."""
    address = text.strip().lower()
    return address if len(address) <= 254 and _EMAIL.match(address) else None

"""The calendar and to-do tools."""

from __future__ import annotations

import datetime

from palaestra import JsonDict, Session, ToolError, tool
from palaestra.envs.workplace.mail import addresses
from palaestra.envs.workplace.state import fetch, like, office_of, rows, text, writes

DAY_START, DAY_END = 9 * 60, 17 * 60
"""Working hours, in minutes after midnight: free slots are looked for in between."""


def valid_date(value: str) -> str:
    try:
        return datetime.date.fromisoformat(value.strip()).isoformat()
    except ValueError:
        raise ToolError(f"{value[:40]!r} is not a date: use YYYY-MM-DD") from None


def valid_time(value: str) -> str:
    hours, _, minutes = value.strip().partition(":")
    if not (hours.isdigit() and minutes.isdigit() and len(minutes) == 2 and len(hours) <= 2):
        raise ToolError(f"{value[:40]!r} is not a time: use HH:MM (24-hour)")
    if int(hours) > 23 or int(minutes) > 59:
        raise ToolError(f"{value[:40]!r} is not a time of day")
    return f"{int(hours):02d}:{minutes}"


def valid_duration(minutes: int) -> int:
    if not 5 <= minutes <= 600:
        raise ToolError("duration_minutes must be between 5 and 600")
    return minutes


def _minutes(clock: str) -> int:
    hours, minutes = clock.split(":")
    return int(hours) * 60 + int(minutes)


def free_slots(busy: list[tuple[str, int]], duration: int) -> list[str]:
    """Start times (on the hour or half hour, within working hours) of free ``duration`` slots,
    given the busy (start, minutes) spans of the day."""
    spans = [(_minutes(start), _minutes(start) + length) for start, length in busy]
    slots = []
    for start in range(DAY_START, DAY_END - duration + 1, 30):
        if all(start + duration <= a or start >= b for a, b in spans):
            slots.append(f"{start // 60:02d}:{start % 60:02d}")
    return slots


class CalendarTools:
    """Alex's calendar and to-do list."""

    @tool
    def list_events(self, session: Session, date: str = "", query: str = "") -> list[JsonDict]:
        """List scheduled calendar events, by date and start time (at most 30).

        Args:
            date: Only events on this day (YYYY-MM-DD); empty for all days.
            query: Only events whose title contains this text.
        """
        sql = "SELECT * FROM events WHERE status = 'scheduled' AND title LIKE ? ESCAPE '\\'"
        params: list[object] = [like(query)]
        if date.strip():
            sql += " AND date = ?"
            params.append(valid_date(date))
        sql += " ORDER BY date, start_time LIMIT 30"
        return rows(office_of(session).db, sql, *params)

    @tool
    def find_free_slots(self, session: Session, date: str, duration_minutes: int = 30) -> JsonDict:
        """Find when Alex is free on a day, between 09:00 and 17:00, on the hour or half hour.

        Args:
            date: The day (YYYY-MM-DD).
            duration_minutes: How long the slot must be.
        """
        day = valid_date(date)
        busy = office_of(session).db.execute(
            "SELECT start_time, duration_minutes FROM events WHERE status = 'scheduled' "
            "AND date = ?",
            (day,),
        )
        slots = free_slots([(str(s), int(m)) for s, m in busy], valid_duration(duration_minutes))
        return {"date": day, "free_start_times": slots}

    @tool
    @writes
    def create_event(
        self,
        session: Session,
        title: str,
        date: str,
        start_time: str,
        duration_minutes: int = 30,
        attendees: list[str] | None = None,
    ) -> JsonDict:
        """Put a new event in the calendar and invite people.

        Args:
            title: The event's title.
            date: The day (YYYY-MM-DD).
            start_time: The start (HH:MM, 24-hour).
            duration_minutes: How long it lasts.
            attendees: The invitees' email addresses (Alex is always in).
        """
        values = (
            text(title, "the title", limit=200),
            valid_date(date),
            valid_time(start_time),
            valid_duration(duration_minutes),
            addresses(attendees) if attendees else "",
        )
        cursor = office_of(session).db.execute(
            "INSERT INTO events (title, date, start_time, duration_minutes, attendees, status) "
            "VALUES (?, ?, ?, ?, ?, 'scheduled')",
            values,
        )
        return {"created": True, "event_id": cursor.lastrowid}

    def _event(self, session: Session, event_id: int) -> JsonDict:
        event = fetch(office_of(session).db, "events", event_id, "event")
        if event["status"] != "scheduled":
            raise ToolError(f"event {event_id} is cancelled")
        return event

    @tool
    @writes
    def reschedule_event(
        self, session: Session, event_id: int, date: str, start_time: str
    ) -> JsonDict:
        """Move an event to another day and/or time (its length stays the same).

        Args:
            event_id: The event's id.
            date: The new day (YYYY-MM-DD).
            start_time: The new start (HH:MM, 24-hour).
        """
        self._event(session, event_id)
        day, clock = valid_date(date), valid_time(start_time)
        office_of(session).db.execute(
            "UPDATE events SET date = ?, start_time = ? WHERE id = ?", (day, clock, event_id)
        )
        return {"event_id": event_id, "date": day, "start_time": clock}

    @tool
    @writes
    def cancel_event(self, session: Session, event_id: int) -> str:
        """Cancel an event.

        Args:
            event_id: The event's id.
        """
        self._event(session, event_id)
        office_of(session).db.execute(
            "UPDATE events SET status = 'cancelled' WHERE id = ?", (event_id,)
        )
        return f"event {event_id} cancelled"

    @tool
    @writes
    def add_attendee(self, session: Session, event_id: int, email: str) -> str:
        """Invite one more person to an event.

        Args:
            event_id: The event's id.
            email: The person's email address.
        """
        event = self._event(session, event_id)
        current = [a for a in str(event["attendees"]).split(",") if a]
        updated = addresses([*current, email])
        if updated == ",".join(sorted(current)):
            raise ToolError(f"{email.strip()[:100]} is already invited")
        office_of(session).db.execute(
            "UPDATE events SET attendees = ? WHERE id = ?", (updated, event_id)
        )
        return f"{email.strip()} invited to event {event_id}"

    @tool
    def list_todos(self, session: Session, include_done: bool = False) -> list[JsonDict]:
        """List Alex's to-dos by due date.

        Args:
            include_done: Also list the ones already done.
        """
        where = "" if include_done else " WHERE done = 0"
        return rows(office_of(session).db, f"SELECT * FROM todos{where} ORDER BY due_date, id")

    @tool
    @writes
    def create_todo(
        self, session: Session, title: str, due_date: str, customer_id: int | None = None
    ) -> JsonDict:
        """Add a to-do.

        Args:
            title: What to do.
            due_date: When it is due (YYYY-MM-DD).
            customer_id: The customer it is about, if any.
        """
        db = office_of(session).db
        if customer_id is not None:
            fetch(db, "customers", customer_id, "customer")
        cursor = db.execute(
            "INSERT INTO todos (title, due_date, customer_id, done) VALUES (?, ?, ?, 0)",
            (text(title, "the title", limit=200), valid_date(due_date), customer_id),
        )
        return {"created": True, "todo_id": cursor.lastrowid}

    @tool
    @writes
    def complete_todo(self, session: Session, todo_id: int) -> str:
        """Mark a to-do as done.

        Args:
            todo_id: The to-do's id.
        """
        db = office_of(session).db
        if fetch(db, "todos", todo_id, "to-do")["done"]:
            raise ToolError(f"to-do {todo_id} is already done")
        db.execute("UPDATE todos SET done = 1 WHERE id = ?", (todo_id,))
        return f"to-do {todo_id} done"

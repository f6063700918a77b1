"""The CRM and company-directory tools."""

from __future__ import annotations

import re
from typing import Literal

from palaestra import JsonDict, Session, ToolError, tool
from palaestra.envs.workplace.state import fetch, like, office_of, rows, text, writes
from palaestra.envs.workplace.store import valid_address

Stage = Literal["prospecting", "proposal", "negotiation", "won", "lost"]
CustomerStatus = Literal["lead", "active", "churned"]
_PHONE = re.compile(r"^\+?[0-9]{6,15}$")


def valid_phone(value: str) -> str:
    """A phone number as stored: digits with an optional leading +, separators dropped."""
    compact = re.sub(r"[\s().-]", "", value.strip())
    if not _PHONE.match(compact):
        raise ToolError(f"{value[:40]!r} is not a phone number")
    return compact


class CrmTools:
    """Customers, their deals and notes; the company directory."""

    @tool
    def find_colleague(self, session: Session, name: str) -> list[JsonDict]:
        """Look a colleague up in the company directory by (part of) their name.

        Args:
            name: The name to look for.
        """
        return rows(
            office_of(session).db,
            "SELECT name, email, title, department FROM employees "
            "WHERE name LIKE ? ESCAPE '\\' ORDER BY name LIMIT 10",
            like(name),
        )

    @tool
    def search_customers(self, session: Session, query: str) -> list[JsonDict]:
        """Find customers whose name or company contains the text (at most 10).

        Args:
            query: Part of the customer's name or company.
        """
        pattern = like(query)
        return rows(
            office_of(session).db,
            "SELECT * FROM customers WHERE name LIKE ? ESCAPE '\\' OR company LIKE ? ESCAPE '\\' "
            "ORDER BY name LIMIT 10",
            pattern,
            pattern,
        )

    @tool
    def get_customer(self, session: Session, customer_id: int) -> JsonDict:
        """One customer with their deals, notes and to-dos.

        Args:
            customer_id: The customer's id.
        """
        db = office_of(session).db
        customer = fetch(db, "customers", customer_id, "customer")
        for table in ("deals", "notes", "todos"):
            customer[table] = rows(db, f"SELECT * FROM {table} WHERE customer_id = ?", customer_id)
        return customer

    @tool
    @writes
    def update_customer(
        self,
        session: Session,
        customer_id: int,
        email: str | None = None,
        phone: str | None = None,
        status: CustomerStatus | None = None,
    ) -> JsonDict:
        """Change a customer's email, phone or status; leave out what stays the same.

        Args:
            customer_id: The customer's id.
            email: The new email address.
            phone: The new phone number.
            status: The new status: lead, active or churned.
        """
        db = office_of(session).db
        fetch(db, "customers", customer_id, "customer")
        changes: dict[str, str] = {}
        if email is not None:
            address = valid_address(email)
            if address is None:
                raise ToolError(f"{email[:100]!r} is not an email address")
            changes["email"] = address
        if phone is not None:
            changes["phone"] = valid_phone(phone)
        if status is not None:
            changes["status"] = status
        if not changes:
            raise ToolError("nothing to change: give email, phone or status")
        assignments = ", ".join(f"{column} = ?" for column in changes)
        db.execute(
            f"UPDATE customers SET {assignments} WHERE id = ?", (*changes.values(), customer_id)
        )
        return {"customer_id": customer_id, "updated": changes}

    @tool
    def list_deals(
        self, session: Session, customer_id: int | None = None, stage: Stage | None = None
    ) -> list[JsonDict]:
        """List deals, optionally of one customer and/or in one stage.

        Args:
            customer_id: Only this customer's deals.
            stage: Only deals in this stage.
        """
        sql, params = "SELECT * FROM deals WHERE 1 = 1", list[object]()
        if customer_id is not None:
            sql += " AND customer_id = ?"
            params.append(customer_id)
        if stage is not None:
            sql += " AND stage = ?"
            params.append(stage)
        return rows(office_of(session).db, sql + " ORDER BY id LIMIT 50", *params)

    @tool
    @writes
    def create_deal(self, session: Session, customer_id: int, title: str, amount: int) -> JsonDict:
        """Open a new deal (in the prospecting stage).

        Args:
            customer_id: The customer's id.
            title: The deal's title.
            amount: Its value in whole dollars.
        """
        db = office_of(session).db
        fetch(db, "customers", customer_id, "customer")
        if not 0 < amount < 10**12:
            raise ToolError("amount must be a positive number of dollars below a trillion")
        cursor = db.execute(
            "INSERT INTO deals (customer_id, title, amount, stage) VALUES (?, ?, ?, 'prospecting')",
            (customer_id, text(title, "the title", limit=200), amount),
        )
        return {"created": True, "deal_id": cursor.lastrowid}

    @tool
    @writes
    def update_deal_stage(self, session: Session, deal_id: int, stage: Stage) -> str:
        """Move a deal to another stage.

        Args:
            deal_id: The deal's id.
            stage: The new stage: prospecting, proposal, negotiation, won or lost.
        """
        db = office_of(session).db
        if fetch(db, "deals", deal_id, "deal")["stage"] == stage:
            raise ToolError(f"deal {deal_id} is already in {stage}")
        db.execute("UPDATE deals SET stage = ? WHERE id = ?", (stage, deal_id))
        return f"deal {deal_id} moved to {stage}"

    @tool
    @writes
    def add_note(self, session: Session, customer_id: int, note: str) -> JsonDict:
        """Add a note to a customer's record.

        Args:
            customer_id: The customer's id.
            note: The note.
        """
        office = office_of(session)
        fetch(office.db, "customers", customer_id, "customer")
        cursor = office.db.execute(
            "INSERT INTO notes (customer_id, text, created_at) VALUES (?, ?, ?)",
            (customer_id, text(note, "the note"), office.now),
        )
        return {"created": True, "note_id": cursor.lastrowid}

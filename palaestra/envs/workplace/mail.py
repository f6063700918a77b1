"""The mailbox tools."""

from __future__ import annotations

from typing import Literal

from palaestra import JsonDict, Session, ToolError, tool
from palaestra.envs.workplace.state import fetch, like, office_of, rows, text, writes
from palaestra.envs.workplace.store import USER_EMAIL, valid_address

Folder = Literal["inbox", "archive", "sent", "trash"]
_LISTED = "id, sender, recipients, subject, sent_at, is_read"


def addresses(values: list[str]) -> str:
    """Recipients as stored: valid addresses, lower case, sorted, comma-separated."""
    if not values:
        raise ToolError("give at least one recipient address")
    if len(values) > 50:
        raise ToolError("at most 50 recipients")
    cleaned = set()
    for value in values:
        address = valid_address(value)
        if address is None:
            raise ToolError(f"{value[:100]!r} is not an email address (look it up first)")
        cleaned.add(address)
    return ",".join(sorted(cleaned))


class MailTools:
    """Alex's mailbox: inbox, archive, sent and trash."""

    @tool
    def list_emails(
        self, session: Session, folder: Folder = "inbox", query: str = "", unread_only: bool = False
    ) -> list[JsonDict]:
        """List the emails of a folder, newest first (at most 25), without their bodies.

        Args:
            folder: The folder: inbox, archive, sent or trash.
            query: Only emails whose sender address or subject contains this text.
            unread_only: Only unread emails.
        """
        sql = (
            f"SELECT {_LISTED} FROM emails WHERE folder = ? "
            "AND (sender LIKE ? ESCAPE '\\' OR subject LIKE ? ESCAPE '\\')"
        )
        pattern = like(query)
        if unread_only:
            sql += " AND is_read = 0"
        return rows(
            office_of(session).db, sql + " ORDER BY sent_at DESC LIMIT 25", folder, pattern, pattern
        )

    @tool
    def read_email(self, session: Session, email_id: int) -> JsonDict:
        """Read one email, with its body. Reading does not mark it as read.

        Args:
            email_id: The email's id.
        """
        return fetch(office_of(session).db, "emails", email_id, "email")

    def _send(
        self, session: Session, to: str, subject: str, body: str, refers_to: int | None
    ) -> JsonDict:
        office = office_of(session)
        cursor = office.db.execute(
            "INSERT INTO emails (folder, sender, recipients, subject, body, sent_at, is_read, "
            "refers_to) VALUES ('sent', ?, ?, ?, ?, ?, 1, ?)",
            (USER_EMAIL, to, subject, body, office.now, refers_to),
        )
        return {"sent": True, "email_id": cursor.lastrowid, "to": to, "subject": subject}

    @tool
    @writes
    def send_email(self, session: Session, to: list[str], subject: str, body: str) -> JsonDict:
        """Send a new email from Alex.

        Args:
            to: The recipients' email addresses.
            subject: The subject line.
            body: The message.
        """
        return self._send(
            session,
            addresses(to),
            text(subject, "the subject", limit=200),
            text(body, "the body"),
            None,
        )

    @tool
    @writes
    def reply_to_email(self, session: Session, email_id: int, body: str) -> JsonDict:
        """Reply to the sender of an email (the subject gets "Re: ").

        Args:
            email_id: The id of the email to answer.
            body: The reply.
        """
        original = fetch(office_of(session).db, "emails", email_id, "email")
        if original["folder"] == "sent":
            raise ToolError("that email was sent by Alex; use send_email to write again")
        subject = str(original["subject"])
        subject = subject if subject.lower().startswith("re:") else f"Re: {subject}"
        return self._send(session, original["sender"], subject, text(body, "the body"), email_id)

    @tool
    @writes
    def forward_email(
        self, session: Session, email_id: int, to: list[str], note: str = ""
    ) -> JsonDict:
        """Forward an email (the subject gets "Fwd: ").

        Args:
            email_id: The id of the email to forward.
            to: The recipients' email addresses.
            note: An optional message above the forwarded email.
        """
        original = fetch(office_of(session).db, "emails", email_id, "email")
        body = f"{text(note, 'the note', required=False)}\n\n---\n{original['body']}".strip()
        subject = f"Fwd: {original['subject']}"
        return self._send(session, addresses(to), subject, body, email_id)

    def _move(self, session: Session, email_id: int, folder: str) -> str:
        db = office_of(session).db
        email = fetch(db, "emails", email_id, "email")
        if email["folder"] == folder:
            raise ToolError(f"email {email_id} is already in {folder}")
        if email["folder"] == "sent":
            raise ToolError("sent emails stay in the sent folder")
        db.execute("UPDATE emails SET folder = ? WHERE id = ?", (folder, email_id))
        return f"email {email_id} moved to {folder}"

    @tool
    @writes
    def archive_email(self, session: Session, email_id: int) -> str:
        """Move an email to the archive.

        Args:
            email_id: The email's id.
        """
        return self._move(session, email_id, "archive")

    @tool
    @writes
    def delete_email(self, session: Session, email_id: int) -> str:
        """Move an email to the trash.

        Args:
            email_id: The email's id.
        """
        return self._move(session, email_id, "trash")

    @tool
    @writes
    def mark_email_read(self, session: Session, email_id: int, read: bool = True) -> str:
        """Mark an email as read (or as unread).

        Args:
            email_id: The email's id.
            read: True for read, false for unread.
        """
        db = office_of(session).db
        fetch(db, "emails", email_id, "email")
        db.execute("UPDATE emails SET is_read = ? WHERE id = ?", (int(read), email_id))
        return f"email {email_id} marked as {'read' if read else 'unread'}"

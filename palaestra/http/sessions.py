"""Session identity over HTTP: a signed cookie (as NeMo Gym keeps it) or an explicit header.

The token is ``<session id>.<keyed BLAKE2b MAC of the id>``: a client cannot forge or guess
another rollout's session, and clients that do not keep cookies send the same token in a header. The
cookie and header names are the protocol's (``palaestra.wire.protocol``), shared with the client.
"""

from __future__ import annotations

import hashlib
import hmac

from starlette.requests import Request

from palaestra.wire.protocol import SESSION_COOKIE, SESSION_HEADER


class SessionSigner:
    def __init__(self, secret: bytes) -> None:
        # BLAKE2b takes keys of up to 64 bytes: a longer secret is hashed down to one.
        self._secret = secret if len(secret) <= 64 else hashlib.blake2b(secret).digest()

    def token(self, session_id: str) -> str:
        return f"{session_id}.{self._signature(session_id)}"

    def session_id(self, token: str | None) -> str | None:
        """The session id a token carries, or None if it is missing or forged."""
        if not token or "." not in token:
            return None
        session_id, _, signature = token.rpartition(".")
        if not token.isascii():  # what a signer made is ASCII; compare_digest refuses the rest
            return None
        if hmac.compare_digest(signature, self._signature(session_id)):
            return session_id
        return None

    def _signature(self, session_id: str) -> str:
        # Keyed BLAKE2b is a MAC by design (RFC 7693) and cheaper than HMAC-SHA256 (measured:
        # benchmarks/results/micro.md), and every request on a session checks one.
        return hashlib.blake2b(session_id.encode(), key=self._secret, digest_size=16).hexdigest()


def token_of(request: Request) -> str | None:
    """The session token a request carries: the header first, then the cookie."""
    return header_of(request, _SESSION_HEADER) or request.cookies.get(SESSION_COOKIE)


def header_of(request: Request, name: bytes) -> str | None:
    """A header's value, ``name`` lower-case as ASGI servers pass names; the first if repeated.

    A scan of the scope's list: Starlette's ``request.headers`` builds an object per request
    first, and the hot routes read one or two headers.
    """
    for key, value in request.scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


_SESSION_HEADER = SESSION_HEADER.encode()

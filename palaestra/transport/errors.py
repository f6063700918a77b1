"""What can go wrong below HTTP: each failure says whether the request may have been seen.

Callers (the model clients' retry loop) turn these into the library's own taxonomy; nothing
here reaches a user unwrapped.
"""

from __future__ import annotations


class TransportError(Exception):
    """A request did not get a whole HTTP answer."""


class InvalidUrl(TransportError):
    """The URL cannot be requested (no http/https scheme, no host, a bad port)."""


class ConnectFailed(TransportError):
    """No connection could be made: refused, unresolvable, unreachable. Nothing was sent."""


class TlsFailed(TransportError):
    """The TLS handshake failed (a bad certificate does not heal on retry)."""


class ConnectionLost(TransportError):
    """The connection ended before the whole answer arrived; the server may have seen it."""


class ProtocolViolation(TransportError):
    """The server answered something that is not HTTP/1.x."""

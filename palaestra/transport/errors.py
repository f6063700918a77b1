"""What can go wrong below HTTP: each failure says whether the request may have been seen.

Callers (the model clients' retry loop) turn these into the library's own taxonomy; nothing
here reaches a user unwrapped. The two timeouts are also ``TimeoutError``, so code that
catches the built-in one still does.
"""

from __future__ import annotations


class TransportError(Exception):
    """A request did not get a whole HTTP answer."""


class InvalidUrl(TransportError):
    """The URL cannot be requested (no http/https scheme, no host, a bad port), or the proxy
    chosen for it cannot be used (an unsupported scheme, no host)."""


class ConnectFailed(TransportError):
    """No connection could be made: refused, unresolvable, unreachable, or the proxy refused
    the tunnel. Nothing was sent to the server."""


class ConnectTimeout(ConnectFailed, TimeoutError):
    """No connection (TCP, proxy tunnel and TLS handshake) within the connect timeout.
    Nothing was sent to the server."""


class TlsFailed(TransportError):
    """The TLS handshake failed (a bad certificate does not heal on retry)."""


class ConnectionLost(TransportError):
    """The connection ended before the whole answer arrived; the server may have seen it."""


class ReadTimeout(TransportError, TimeoutError):
    """No whole answer within the read timeout of sending; the server may have seen it."""


class ProtocolViolation(TransportError):
    """The server answered something that is not HTTP/1.x."""


class AnswerTooLarge(TransportError):
    """The answer grew past the client's ``max_answer_bytes``; the connection was closed."""

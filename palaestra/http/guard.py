"""Security defaults for every server: an optional bearer token and a bounded request body.

The token is compared as bytes (the header's raw bytes against the token's UTF-8): a header
that is not ASCII, or not a bearer header at all, is a wrong token (401), never an error.
"""

from __future__ import annotations

import hmac
from typing import Any

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from palaestra.errors import PalaestraError
from palaestra.wire.protocol import error_body

DEFAULT_MAX_BODY = 32 * 1024 * 1024


class Guard:
    """ASGI middleware: 401 without the bearer token (when one is set), 413 for a huge body."""

    def __init__(
        self, app: ASGIApp, *, token: str | None = None, max_body: int = DEFAULT_MAX_BODY
    ) -> None:
        self.app = app
        self.token = token
        self._secret = None if token is None else token.encode("utf-8")
        self.max_body = max_body
        self._direct: Any = getattr(app, "direct_route", None)

    def direct_route(self, scope: Scope) -> Any:
        """The app's direct route for a request this guard lets through as it is, else None.

        palaestra's HTTP protocol reads a direct route's body whole before calling it, so
        only a request with an allowed token and a declared length within ``max_body`` goes
        direct; any other goes through ``__call__``, which refuses it or bounds its body as it
        is read.
        """
        if self._direct is None:
            return None
        authorization = declared = None
        for name, value in scope["headers"]:
            if name == b"content-length":
                declared = value
            elif name == b"authorization":
                authorization = value
        if declared is None or not declared.isdigit() or int(declared) > self.max_body:
            return None
        if self._secret is not None and not bearer_matches(authorization, self._secret):
            return None
        return self._direct(scope)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # ASGI servers lower-case header names; only two are read (no dict per request).
        authorization = declared = None
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                declared = value.decode("latin-1")
            elif name == b"authorization":
                authorization = value
        if self._secret is not None and not bearer_matches(authorization, self._secret):
            await _refuse(send, 401, "missing or wrong bearer token", _CHALLENGE)
            return
        if declared is not None and declared.isdigit():
            if int(declared) > self.max_body:
                await _refuse(send, 413, f"request body over {self.max_body} bytes")
                return
            # The server reads exactly the declared length as the body: it is bounded.
            await self.app(scope, receive, send)
            return
        await self.app(scope, self._bounded(receive, send), send)

    def _bounded(self, receive: Receive, send: Send) -> Receive:
        seen = 0

        async def bounded_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise BodyTooLarge(self.max_body)
            return message

        return bounded_receive


class BodyTooLarge(PalaestraError):
    """A request body grew past the server's cap while it was read (a 413)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"request body over {limit} bytes")


def bearer_matches(header: bytes | str | None, secret: bytes) -> bool:
    """Whether an ``Authorization`` header carries the bearer token ``secret`` (its UTF-8).

    Bytes against bytes: ``hmac.compare_digest`` raises on ``str`` that are not ASCII, so
    a header is never compared as text (a ``str`` header is taken as UTF-8)."""
    if isinstance(header, str):
        header = header.encode("utf-8", "surrogateescape")
    if not header or header[:7].lower() != b"bearer ":
        return False
    return hmac.compare_digest(header[7:].strip(), secret)


_CHALLENGE = [(b"www-authenticate", b"Bearer")]
"""What a 401 asks for (RFC 6750): a bearer token."""


async def _refuse(
    send: Send, status: int, message: str, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    payload = orjson.dumps(error_body(status, message))
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *(headers or ()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})

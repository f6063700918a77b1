"""A lean HTTP/1.1 client for model calls: keep-alive pools over asyncio and llhttp."""

from palaestra.transport.client import (
    UNIX_SCHEME,
    FramedHeaders,
    HttpClient,
    has_credentials,
    redacted_url,
    shown_url,
    unix_url,
)
from palaestra.transport.connection import HttpAnswer
from palaestra.transport.errors import (
    AnswerTooLarge,
    ConnectFailed,
    ConnectionLost,
    ConnectTimeout,
    InvalidUrl,
    ProtocolViolation,
    ReadTimeout,
    TlsFailed,
    TransportError,
)
from palaestra.transport.proxy import Proxies

__all__ = [
    "UNIX_SCHEME",
    "AnswerTooLarge",
    "ConnectFailed",
    "ConnectTimeout",
    "ConnectionLost",
    "FramedHeaders",
    "HttpAnswer",
    "HttpClient",
    "InvalidUrl",
    "ProtocolViolation",
    "Proxies",
    "ReadTimeout",
    "TlsFailed",
    "TransportError",
    "has_credentials",
    "redacted_url",
    "shown_url",
    "unix_url",
]

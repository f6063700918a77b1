"""A lean HTTP/1.1 client for model calls: keep-alive pools over asyncio and llhttp."""

from palaestra.transport.client import HttpClient
from palaestra.transport.connection import HttpAnswer
from palaestra.transport.errors import (
    ConnectFailed,
    ConnectionLost,
    InvalidUrl,
    ProtocolViolation,
    TlsFailed,
    TransportError,
)

__all__ = [
    "ConnectFailed",
    "ConnectionLost",
    "HttpAnswer",
    "HttpClient",
    "InvalidUrl",
    "ProtocolViolation",
    "TlsFailed",
    "TransportError",
]

"""Network helpers shared by the tests."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nobody listens on (bound, read and released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port

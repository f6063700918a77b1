"""uvicorn's WebSocket protocol (websockets' sans-I/O) closing a failed connection cleanly.

When a client breaks the protocol (most often: a message past the size cap) websockets fails
the connection with a close frame that says why (1009 and a reason for a message too big), and
uvicorn then closes the socket at once. A socket closed with unread input answers the client
with a TCP reset, and a reset throws away whatever the client had not read yet: the close
frame with it. A client still sending its big message saw its connection dropped, with no code
and no reason.

Here the server, after the close frame, shuts down only its sending side and reads and
discards what the client still sends, until the client closes its side (it does once it reads
the close frame) or ``LINGER_SECONDS`` pass. The client reads the code and the reason.
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

LINGER_SECONDS = 10.0
"""How long a failed connection keeps reading (and discarding) before its socket closes:
enough for a client on a fast link to finish sending a message of tens of megabytes."""


class WebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O WebSocket protocol whose failed connections linger (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lingering = False

    def data_received(self, data: bytes) -> None:
        if self.lingering:
            return  # the connection has failed: what the client still sends is discarded
        super().data_received(data)

    def handle_parser_exception(self) -> None:
        close = self.conn.close_sent
        if close is None:  # not a failure websockets answered with a close frame
            super().handle_parser_exception()
            return
        self.queue.put_nowait(
            {"type": "websocket.disconnect", "code": close.code, "reason": close.reason}
        )
        self.transport.write(b"".join(self.conn.data_to_send()))
        self.close_sent = True
        self.lingering = True
        if self.transport.can_write_eof():
            self.transport.write_eof()  # the close frame, then our end of the stream
        if self.read_paused:  # paused for the app's last message: the discarding must go on
            self.read_paused = False
            self.transport.resume_reading()
        # The client's end of the stream closes the transport (``eof_received``); this, else.
        self.close_timer = self.loop.call_later(LINGER_SECONDS, self.transport.close)

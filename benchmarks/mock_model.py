"""An instant OpenAI-compatible model for the weather task, cheap enough not to be the bottleneck.

It answers ``POST /v1/responses`` (and ``/responses``) with a ``get_weather`` function call when
the request holds no ``function_call_output`` item, and with a short assistant message once it
does: exactly the two model turns of NeMo Gym's example_single_tool_call task. ``GET
/v1/models`` lists one model; ``GET /stats`` answers the counters the benchmark reads.

To stay cheap it is a bare asyncio protocol (on uvloop when installed) with a minimal HTTP/1.1
parser (keep-alive, Content-Length bodies) and pre-serialised answers; it decides between the
two answers by searching the body for ``function_call_output`` instead of parsing the JSON.
``--delay`` sleeps that many seconds before each model answer without using any CPU (a timer
per request), for the concurrency benchmark.

Run: ``python benchmarks/mock_model.py [--port 0] [--delay 0]``; it prints
``MOCK_READY <port>`` on stdout once it listens on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import resource
import signal
import sys
import time

import orjson

MODEL = "mock-weather"
USAGE = {
    "input_tokens": 60,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 12,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 72,
}


def _response(output: dict[str, object], response_id: str) -> bytes:
    return orjson.dumps(
        {
            "id": response_id,
            "object": "response",
            "created_at": 1_763_700_000,
            "model": MODEL,
            "status": "completed",
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "metadata": {},
            "output": [output],
            "parallel_tool_calls": True,
            "temperature": 1.0,
            "tool_choice": "auto",
            "tools": [],
            "top_p": 1.0,
            "usage": USAGE,
        }
    )


TOOL_CALL = _response(
    {
        "type": "function_call",
        "id": "fc_mock_1",
        "call_id": "call_mock_1",
        "name": "get_weather",
        "arguments": '{"city": "San Francisco"}',
        "status": "completed",
    },
    "resp_mock_tool",
)
TEXT = _response(
    {
        "type": "message",
        "id": "msg_mock_1",
        "role": "assistant",
        "status": "completed",
        "content": [
            {"type": "output_text", "text": "It is cold in San Francisco.", "annotations": []}
        ],
    },
    "resp_mock_text",
)
MODELS = orjson.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]})


def _http(status: str, body: bytes) -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


TOOL_CALL_HTTP = _http("200 OK", TOOL_CALL)
TEXT_HTTP = _http("200 OK", TEXT)
MODELS_HTTP = _http("200 OK", MODELS)
NOT_FOUND_HTTP = _http("404 Not Found", b'{"detail":"Not Found"}')
LENGTH_REQUIRED_HTTP = _http("411 Length Required", b'{"detail":"Content-Length required"}')


class Counters:
    """What the benchmark reads from ``GET /stats``; ``POST /reset`` zeroes it."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.tool_calls = 0
        self.texts = 0
        self.other = 0
        self.connections = 0
        self.in_flight = 0
        self.peak_in_flight = 0
        self.first_call_at = 0.0
        self.last_answer_at = 0.0

    def to_json(self) -> bytes:
        return orjson.dumps(
            {
                "tool_calls": self.tool_calls,
                "texts": self.texts,
                "other": self.other,
                "connections": self.connections,
                "in_flight": self.in_flight,
                "peak_in_flight": self.peak_in_flight,
                "first_call_at": self.first_call_at,
                "last_answer_at": self.last_answer_at,
            }
        )


def take_request(buffer: bytes) -> tuple[bytes, bytes, bytes, bytes] | None:
    """(head, head in lower case, body, the rest) of the first whole request in ``buffer``; None
    until it has all arrived. Content-Length bodies only (a chunked one reads as bodiless)."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = buffer[:end]
    lowered = head.lower()
    at = lowered.find(b"content-length:")
    length = 0
    if at >= 0:
        stop = lowered.find(b"\r\n", at)
        length = int(lowered[at + 15 : stop if stop >= 0 else None])
    total = end + 4 + length
    if len(buffer) < total:
        return None
    return head, lowered, buffer[end + 4 : total], buffer[total:]


class MockHttp(asyncio.Protocol):
    """One keep-alive connection: parse requests in order, answer each (after ``delay``)."""

    def __init__(self, counters: Counters, delay: float) -> None:
        self.counters = counters
        self.delay = delay
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no subclass
        self.counters.connections += 1

    def data_received(self, data: bytes) -> None:
        self.buffer = self.buffer + data if self.buffer else data
        while (request := take_request(self.buffer)) is not None:
            head, lowered, body, self.buffer = request
            if b"transfer-encoding: chunked" in lowered:
                self._send(LENGTH_REQUIRED_HTTP, close=True)
                return
            self._handle(head, body, close=b"connection: close" in lowered)

    def _handle(self, head: bytes, body: bytes, *, close: bool) -> None:
        line = head[: head.find(b"\r\n")] if b"\r\n" in head else head
        parts = line.split(b" ")
        method, path = parts[0], parts[1] if len(parts) > 1 else b"/"
        path = path.split(b"?", 1)[0]
        counters = self.counters
        if method == b"POST" and path in (b"/v1/responses", b"/responses"):
            if not counters.first_call_at:
                counters.first_call_at = time.time()
            if b"function_call_output" in body:
                counters.texts += 1
                answer = TEXT_HTTP
            else:
                counters.tool_calls += 1
                answer = TOOL_CALL_HTTP
            if self.delay > 0:
                counters.in_flight += 1
                counters.peak_in_flight = max(counters.peak_in_flight, counters.in_flight)
                self.loop.call_later(self.delay, self._delayed, answer, close)
                return
            self._send(answer, close=close)
            counters.last_answer_at = time.time()
        elif method == b"GET" and path in (b"/v1/models", b"/models"):
            self._send(MODELS_HTTP, close=close)
        elif method == b"GET" and path == b"/stats":
            self._send(_http("200 OK", counters.to_json()), close=close)
        elif method == b"POST" and path == b"/reset":
            counters.reset()
            self._send(_http("200 OK", b"{}"), close=close)
        else:
            counters.other += 1
            self._send(NOT_FOUND_HTTP, close=close)

    def _delayed(self, answer: bytes, close: bool) -> None:
        self.counters.in_flight -= 1
        self._send(answer, close=close)
        self.counters.last_answer_at = time.time()

    def _send(self, answer: bytes, *, close: bool) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        transport.write(answer)
        if close:
            transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None


async def serve(port: int, delay: float) -> None:
    counters = Counters()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: MockHttp(counters, delay), "127.0.0.1", port, backlog=16384, reuse_address=True
    )
    bound = server.sockets[0].getsockname()[1]
    print(f"MOCK_READY {bound}", flush=True)
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with server:
        await stop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    options = parser.parse_args()
    # Thousands of concurrent connections need as many descriptors.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    factory = asyncio.new_event_loop
    with contextlib.suppress(ImportError):
        import uvloop

        factory = uvloop.new_event_loop
    try:
        with asyncio.Runner(loop_factory=factory) as runner:
            runner.run(serve(options.port, options.delay))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()

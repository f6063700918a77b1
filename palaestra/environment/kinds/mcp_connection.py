"""One live connection to an MCP server, held on a loop of its own.

The ``mcp`` package's client is built on anyio task groups and cancel scopes, which must be
left by the task that entered them. A connection is therefore held open by one task (it
enters the transport and the ``ClientSession`` and waits to be told to close), and calls are
made beside it. Every connection of the process lives on one event loop in a daemon thread:
an environment lists its server's tools from plain code (``Environment.tools`` is not async,
and is called while the runner's own loop is running), and a server started then keeps
serving the rollouts later. Calls from the runner's loop hop over to it
(``palaestra._util.loop.LoopThread``); cancelling the awaiting side cancels the call.

``mcp`` is imported here only, when a connection opens: ``import palaestra`` never loads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import threading
from collections.abc import Callable, Coroutine, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, TypeVar

from palaestra._util.loop import LoopThread
from palaestra.errors import ConfigError, PalaestraError

if TYPE_CHECKING:
    from mcp import ClientSession

T = TypeVar("T")

CONNECTION_CLOSED = -32000
"""The code of the error the ``mcp`` package raises for a call when its connection closes."""
STDERR_TAIL = 600
"""Characters of a stdio server's stderr quoted when it fails to start or dies."""


@dataclass(frozen=True, slots=True)
class Transport:
    """Where a server is: a command to start (stdio), a URL (streamable HTTP), or streams of
    the caller's (``streams``)."""

    command: tuple[str, ...] = ()
    url: str | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    streams: Callable[[], AbstractAsyncContextManager[Any]] | None = None
    """A transport of the caller's, used instead of starting ``command`` here: an async
    context giving the session's read and write streams (a server run in a machine)."""

    def describe(self) -> str:
        return self.url if self.url is not None else " ".join(self.command)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a server answered to one call: its text, its structured content, its error flag."""

    text: str
    structured: Any
    is_error: bool


class MCPConnectionLost(PalaestraError):
    """The server closed the connection, died, or answered a protocol error."""


def _import_mcp() -> Any:
    try:
        import mcp
    except ImportError as error:
        raise ConfigError(
            f"MCP tools need the mcp package ({error}): pip install 'palaestra[mcp]'"
        ) from None
    return mcp


class Connection:
    """An open MCP client session to one server; lives on ``mcp_loop()``."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.session: ClientSession | None = None
        self._closing = asyncio.Event()
        self._holder: asyncio.Task[None] | None = None
        self._stderr: IO[str] | None = None
        self.ended: str | None = None
        """Why the connection ended (set once it has), for the next call's message."""

    async def open(self, timeout: float) -> None:
        """Start the server (stdio) or reach it (HTTP), and initialise; within ``timeout``.

        Raises ``MCPConnectionLost`` naming the reason (and a stdio server's last stderr)."""
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._holder = asyncio.create_task(self._hold(ready))
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(ready)
        except TimeoutError:
            await self.close()
            raise MCPConnectionLost(f"did not start within {timeout:g}s{self._tail()}") from None
        except MCPConnectionLost:
            await self.close()
            raise

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        mcp = _import_mcp()
        try:
            async with contextlib.AsyncExitStack() as stack:
                streams = await stack.enter_async_context(self._transport_context(mcp))
                session = await stack.enter_async_context(mcp.ClientSession(streams[0], streams[1]))
                await session.initialize()
                self.session = session
                ready.set_result(None)
                await self._closing.wait()
        except asyncio.CancelledError:
            self.ended = self.ended or "the connection was closed"
            raise
        except BaseException as error:  # anyio wraps what the transport raised in a group
            reason = _reason(error)
            self.ended = f"the connection ended ({reason}){self._tail()}"
            if not ready.done():
                ready.set_exception(MCPConnectionLost(f"{reason}{self._tail()}"))
        finally:
            self.session = None
            self.ended = self.ended or "the connection was closed"
            if not ready.done():
                ready.set_exception(MCPConnectionLost("the connection closed while starting"))

    def _transport_context(self, mcp: Any) -> Any:
        transport = self.transport
        if transport.streams is not None:
            return transport.streams()
        if transport.url is not None:
            from mcp.client.streamable_http import streamable_http_client

            if not transport.headers:
                return streamable_http_client(transport.url)
            return _http_with_headers(transport.url, transport.headers)
        # Held open while the server runs (its stderr), read when it fails, closed in close().
        self._stderr = tempfile.TemporaryFile(  # noqa: SIM115
            mode="w+", encoding="utf-8", errors="replace"
        )
        parameters = mcp.StdioServerParameters(
            command=transport.command[0],
            args=list(transport.command[1:]),
            env=transport.env,
            cwd=transport.cwd,
        )
        return mcp.stdio_client(parameters, errlog=self._stderr)

    def _tail(self) -> str:
        """The last of a stdio server's stderr, as ``"; stderr: ..."``, or nothing."""
        if self._stderr is None or self._stderr.closed:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self._stderr.flush()
            self._stderr.seek(0)
            text = self._stderr.read().strip()
            if text:
                return (
                    f"; stderr: ...{text[-STDERR_TAIL:]}"
                    if len(text) > STDERR_TAIL
                    else (f"; stderr: {text}")
                )
        return ""

    async def list_tools(self) -> list[Any]:
        """Every tool the server lists (all pages)."""
        session = self._live()
        tools: list[Any] = []
        cursor: str | None = None
        while True:
            params = None
            if cursor is not None:
                from mcp.types import PaginatedRequestParams

                params = PaginatedRequestParams(cursor=cursor)
            try:
                page = await session.list_tools(params=params)
            except Exception as error:
                raise MCPConnectionLost(f"tools/list failed: {_reason(error)}") from error
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return tools

    async def call(self, name: str, arguments: dict[str, Any], timeout: float) -> ToolResult:
        """Call a tool; ``MCPConnectionLost`` if the connection ends, ``TimeoutError`` past
        ``timeout``. A tool that failed (``isError``) is a ``ToolResult``, not an error."""
        session = self._live()
        try:
            async with asyncio.timeout(timeout):
                result = await session.call_tool(name, arguments)
        except TimeoutError:
            raise
        except Exception as error:
            if _closed(error):  # the server died or hung up: no later call can succeed
                self.session = None
                self.ended = f"the connection ended ({_reason(error)}){self._tail()}"
            raise MCPConnectionLost(_reason(error)) from error
        return ToolResult(_text(result.content), result.structured_content, bool(result.is_error))

    @property
    def alive(self) -> bool:
        """Whether calls may still succeed (False once the connection is known to be gone)."""
        return self.session is not None

    def _live(self) -> ClientSession:
        if self.session is None:
            raise MCPConnectionLost(self.ended or "the connection is not open")
        return self.session

    async def close(self) -> None:
        """Close the session and stop a stdio server (idempotent)."""
        self._closing.set()
        holder, self._holder = self._holder, None
        if holder is not None and not holder.done():
            try:
                async with asyncio.timeout(10):
                    await asyncio.shield(holder)
            except TimeoutError:
                holder.cancel()
                with contextlib.suppress(BaseException):
                    await holder
        if self._stderr is not None:
            with contextlib.suppress(OSError):
                self._stderr.close()


def _http_with_headers(url: str, headers: dict[str, str]) -> Any:
    """``streamable_http_client`` over an HTTP client that sends ``headers`` (a token)."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    @contextlib.asynccontextmanager
    async def context() -> Any:
        timeout = httpx2.Timeout(30, read=300)
        async with (
            httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
            streamable_http_client(url, http_client=http) as streams,
        ):
            yield streams

    return context()


def _text(content: Sequence[Any]) -> str:
    """A result's content as the text a model reads: text blocks joined, others named."""
    parts = []
    for block in content:
        text = getattr(block, "text", None)
        parts.append(text if isinstance(text, str) else f"[{getattr(block, 'type', 'content')}]")
    return "\n".join(parts)


def _reason(error: BaseException) -> str:
    """The innermost meaningful message of ``error`` (anyio groups unwrapped)."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(_reason(inner) for inner in error.exceptions)
    message = str(error.args[1]) if _is_mcp_error(error) else str(error)
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def _closed(error: BaseException) -> bool:
    """Whether ``error`` says the connection is gone (the ``mcp`` package's CONNECTION_CLOSED,
    or the transport's own failure), not that the server refused one request."""
    if not _is_mcp_error(error):
        return True
    return bool(error.args[0] == CONNECTION_CLOSED and error.args[1] == "Connection closed")


def _is_mcp_error(error: BaseException) -> bool:
    return type(error).__name__ == "MCPError" and len(error.args) >= 2


_loop: LoopThread | None = None
_loop_lock = threading.Lock()


def mcp_loop() -> LoopThread:
    """The loop every MCP connection of this process lives on (started on first use)."""
    global _loop
    with _loop_lock:
        if _loop is None or _loop.loop.is_closed():
            _loop = LoopThread("palaestra-mcp")
        return _loop


async def on_mcp_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """Await ``coroutine`` on the MCP loop from another loop (cancelling it with this)."""
    return await mcp_loop().wait(coroutine)


def on_mcp_loop_blocking(coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
    """Run ``coroutine`` on the MCP loop and wait for it here (plain code, any thread but
    the MCP loop's own)."""
    return mcp_loop().run(coroutine, timeout)

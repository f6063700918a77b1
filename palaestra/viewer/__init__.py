"""``palaestra view``: a local web viewer of rollout files.

``view(["runs/a.jsonl"])`` indexes the file (and its failures sidecar) in one streaming pass,
then serves a page on 127.0.0.1 with the run's summary, a table of its rollouts to filter and
sort, each rollout drawn as a conversation (tool calls, simulated-user turns, verdict, failure,
timings, usage) with its token-level view, and, given two files, both runs side by side paired
by task. Rows are read from disk as the page asks for them, so a 100,000-row file opens in
about a second. The page's script and style ship in the package: no build step, no network.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

from palaestra.errors import InputError
from palaestra.viewer.runs import Run

__all__ = ["Run", "open_runs", "view", "view_async"]


def open_runs(paths: Sequence[str | Path]) -> list[Run]:
    """Index each rollouts file (one or two); ``InputError`` naming a file that is not one."""
    if not 1 <= len(paths) <= 2:
        raise InputError("view one rollouts file, or two to compare them")
    return [Run.open(Path(path)) for path in paths]


def view(
    paths: Sequence[str | Path],
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    open_browser: bool = False,
    on_ready: Callable[[str, list[Run]], None] | None = None,
) -> None:
    """Serve the viewer of ``paths`` until interrupted.

    ``port=0`` picks a free port; ``on_ready(url, runs)`` is called once it listens (the URL
    carries ``?token=`` when a token is set); ``open_browser`` opens it in this machine's
    browser. A busy port or a file that is not a rollouts file is a one-line error.
    """
    from palaestra._util.loop import run_on_fast_loop

    run_on_fast_loop(
        view_async(
            paths, host=host, port=port, token=token, open_browser=open_browser, on_ready=on_ready
        )
    )


async def view_async(
    paths: Sequence[str | Path],
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    open_browser: bool = False,
    on_ready: Callable[[str, list[Run]], None] | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """``view`` on the running event loop; setting ``stop`` shuts it down."""
    from urllib.parse import quote

    from palaestra.http.announce import serve_announced
    from palaestra.viewer.app import viewer_app

    runs = await asyncio.to_thread(open_runs, paths)
    app = viewer_app(runs, token=token, host=host)

    def ready(url: str) -> None:
        page = f"{url}/?token={quote(token, safe='')}" if token else f"{url}/"
        if on_ready is not None:
            on_ready(page, runs)
        if open_browser:
            import webbrowser

            webbrowser.open(page)

    await serve_announced(app, host=host, port=port, on_ready=ready, stop=stop)

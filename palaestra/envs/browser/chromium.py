"""One headless Chromium, driven over the DevTools protocol on a loopback websocket.

Why the DevTools protocol and not selenium with chromedriver: it needs no second process per
browser (chromedriver) and no package beyond ``websockets``, which palaestra's servers already
bring; it dispatches real input events at pixel coordinates (what a screenshot-reading agent
does) as easily as it evaluates script in the page (what the DOM actions and the page's reward
need); and palaestra launches the browser itself, so it owns the process group that makes
teardown certain (``watchdog.py``).

Chromium starts with a fresh profile in a temporary directory, headless, with every host name
mapped to nothing (``--host-resolver-rules``), so a page can reach no network: MiniWoB's pages
are ``file://`` documents. One page target per browser, attached in flat mode, so every
command goes over one websocket.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from palaestra import ConfigError, EnvironmentFailure, JsonDict

INSTALL = "bash scripts/install_browser.sh (Debian's chromium)"
WATCHDOG = Path(__file__).with_name("watchdog.py")
START_TIMEOUT = 30.0
"""Seconds a browser may take to open its DevTools port."""
COMMAND_TIMEOUT = 20.0
"""Seconds one DevTools command may take before the browser counts as dead."""
PROFILE_PREFIX = "palaestra-browser-"
"""Start of every profile directory's name: what a test looks for among live processes."""
MAX_TMPDIR = 40
"""Longest temporary directory a browser starts in: Chromium puts a Unix socket under its own
temporary directory (``<TMPDIR>/palaestra-browser-*/.org.chromium.Chromium.*/SingletonSocket``
here), and a socket's path ends at 108 bytes."""
FLAGS = (
    "--headless=new",
    "--no-sandbox",  # as root Chromium refuses its own sandbox; the page is MiniWoB's
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-breakpad",
    "--disable-crash-reporter",
    "--disable-dev-shm-usage",
    "--mute-audio",
    "--hide-scrollbars",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
    "--remote-allow-origins=*",
    "--allow-file-access-from-files",
)


def chromium_path() -> str:
    """The Chromium binary: ``PALAESTRA_CHROMIUM``, else Debian's (its real binary rather
    than the shell wrapper), else ``chromium``/``google-chrome`` on PATH; one ConfigError line
    when there is none."""
    configured = os.environ.get("PALAESTRA_CHROMIUM")
    if configured:
        return configured
    if Path("/usr/lib/chromium/chromium").is_file():
        return "/usr/lib/chromium/chromium"
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise ConfigError(f"browser needs Chromium: {INSTALL}")


class Browser:
    """A running Chromium with one page: ``call`` sends a DevTools command to the page.

    ``close`` ends it for good (the watchdog kills the process group and removes the
    profile); so does the end of this process, whichever way it ends."""

    def __init__(self, width: int, height: int) -> None:
        from websockets.sync.client import connect

        self.width, self.height = width, height
        scratch = tempfile.gettempdir()
        if len(scratch) > MAX_TMPDIR:
            raise ConfigError(
                f"browser: TMPDIR {scratch!r} is too long for Chromium (its socket path there "
                f"must stay under 108 bytes): use one of at most {MAX_TMPDIR} bytes, e.g. /tmp"
            )
        self.profile = tempfile.mkdtemp(prefix=PROFILE_PREFIX)
        command = [
            chromium_path(),
            *FLAGS,
            f"--user-data-dir={self.profile}",
            f"--window-size={width},{height}",
            "about:blank",
        ]
        self.started = time.monotonic()
        self._keeper = subprocess.Popen(
            [sys.executable, "-I", str(WATCHDOG), self.profile, *command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, "TMPDIR": self.profile},  # Chromium's own temporary files too
        )
        self._exits = contextlib.ExitStack()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.closed = False
        try:
            assert self._keeper.stdout is not None
            self.pid = int(self._keeper.stdout.readline() or 0)
            endpoint = self._devtools_endpoint()
            self._socket = self._exits.enter_context(
                connect(
                    endpoint, max_size=64 * 2**20, open_timeout=START_TIMEOUT, ping_interval=None
                )
            )
            target = self._send("Target.createTarget", {"url": "about:blank"})["targetId"]
            attached = self._send("Target.attachToTarget", {"targetId": target, "flatten": True})
            self._session = str(attached["sessionId"])
            self.call(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            )
        except BaseException:
            self.close()
            raise

    def _devtools_endpoint(self) -> str:
        """The browser's websocket address, from the ``DevToolsActivePort`` file it writes."""
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._keeper.poll() is not None:
                raise EnvironmentFailure("browser: Chromium exited while starting")
            try:
                port, path = port_file.read_text().split()[:2]
                return f"ws://127.0.0.1:{int(port)}{path}"
            except (OSError, ValueError):
                time.sleep(0.02)
        raise EnvironmentFailure(f"browser: Chromium did not start within {START_TIMEOUT:.0f} s")

    def _send(
        self, method: str, params: JsonDict | None = None, session: str | None = None
    ) -> JsonDict:
        message: JsonDict = {"id": next(self._ids), "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        with self._lock:
            if self.closed:
                raise EnvironmentFailure("browser: the browser was closed")
            try:
                self._socket.send(orjson.dumps(message).decode())
                deadline = time.monotonic() + COMMAND_TIMEOUT
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise TimeoutError(method)
                    reply = orjson.loads(self._socket.recv(timeout=left))
                    if reply.get("id") == message["id"]:
                        break
            except (OSError, TimeoutError, EOFError) as error:
                raise EnvironmentFailure(f"browser: {method} got no answer ({error!r})") from None
            except Exception as error:  # the websocket closed: the browser is gone
                raise EnvironmentFailure(f"browser: {method} failed ({error!r})") from None
        if "error" in reply:
            raise EnvironmentFailure(f"browser: {method}: {reply['error'].get('message')}")
        result: JsonDict = reply.get("result", {})
        return result

    def call(self, method: str, params: JsonDict | None = None) -> JsonDict:
        """Send a DevTools command to the page and return its result."""
        return self._send(method, params, self._session)

    def evaluate(self, expression: str) -> Any:
        """The value of a script expression in the page (promises awaited)."""
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise EnvironmentFailure(f"browser: script failed: {str(text)[:300]}")
        return result.get("result", {}).get("value")

    def screenshot(self, width: int, height: int) -> bytes:
        """A PNG of the page's top-left ``width`` x ``height`` pixels."""
        shot = self.call(
            "Page.captureScreenshot",
            {
                "format": "png",
                "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
            },
        )
        return base64.b64decode(shot["data"])

    def healthy(self) -> bool:
        """Whether the browser still answers (a cheap round trip), its keeper still alive."""
        if self.closed or self._keeper.poll() is not None:
            return False
        try:
            return bool(self.evaluate("1 + 1") == 2)
        except EnvironmentFailure:
            return False

    def close(self) -> None:
        """End the browser: closing the keeper's pipe makes it kill the process group and
        remove the profile. Safe to call twice."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
        with contextlib.suppress(Exception):  # broken: the keeper still kills the browser
            self._exits.close()
        if self._keeper.stdin is not None:
            self._keeper.stdin.close()
        try:
            self._keeper.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._keeper.kill()
            self._keeper.wait(timeout=5)
            if self.pid:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.pid, 9)
        if self._keeper.stdout is not None:
            self._keeper.stdout.close()
        shutil.rmtree(self.profile, ignore_errors=True)


__all__ = ["PROFILE_PREFIX", "Browser", "chromium_path"]

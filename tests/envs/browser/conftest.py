"""The browser environment's tests run the real Chromium on MiniWoB++'s real pages (never a
mock): without Chromium (``bash scripts/install_browser.sh``) or the ``miniwob`` package they
fail saying so. Every test ends with no browser of this process alive."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest

from palaestra.envs.browser.chromium import PROFILE_PREFIX, chromium_path
from palaestra.envs.browser.miniwob import html_dir


def browser_processes(marker: str = PROFILE_PREFIX) -> list[str]:
    """Pids of live processes whose command line holds ``marker`` (a profile's path)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                text = cmdline.read().decode(errors="replace")
        except OSError:
            continue
        if marker in text and "chromium" in text.split("\0", 1)[0]:
            found.append(entry)
    return found


def own_browsers() -> list[str]:
    """Chromium processes whose keeper this test process started."""
    done = subprocess.run(
        ["pgrep", "-f", "-P", str(os.getpid()), "watchdog.py"], capture_output=True, text=True
    )
    return done.stdout.split()


@pytest.fixture(autouse=True)
def real_browser_and_no_leftovers() -> Iterator[None]:
    chromium_path()  # a ConfigError naming the install script when there is none
    html_dir()
    yield
    assert own_browsers() == []

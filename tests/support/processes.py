"""Child processes that tests interrupt with Ctrl-C (SIGINT)."""

from __future__ import annotations

import signal


def interruptible() -> None:
    """A ``preexec_fn``: SIGINT back to its default in the child, so Ctrl-C reaches it as from a
    terminal even when the test run itself was started in the background (a shell without job
    control starts background commands with SIGINT ignored, and children inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)

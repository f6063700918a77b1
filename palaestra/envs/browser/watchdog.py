"""The keeper of one Chromium: run by path (standard library only), never imported.

``python watchdog.py USER_DATA_DIR CHROMIUM ARGS...`` starts Chromium in a process group of
its own and stays its parent. Its standard input is a pipe whose other end only the process
that leased the browser holds: when that process ends, however it ends (``kill -9``
included), the pipe reaches end of file, and the watchdog kills Chromium's whole process group
(the browser, its zygote, renderers and GPU process) and removes the profile directory. It
does the same when Chromium exits by itself, so a crashed browser leaves no renderer behind.
Chromium is also given ``PR_SET_PDEATHSIG`` towards the watchdog, so killing the watchdog
alone still takes the browser down.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In Chromium, between fork and exec: SIGKILL when the watchdog (its parent) dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def main(argv: list[str]) -> int:
    profile, command = argv[0], argv[1:]
    browser = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )
    print(browser.pid, flush=True)  # the lessee learns the group to kill, if it ever must
    done = threading.Event()

    def wait_for_eof() -> None:
        while sys.stdin.buffer.read(4096):
            pass
        done.set()

    threading.Thread(target=wait_for_eof, daemon=True).start()
    while not done.is_set() and browser.poll() is None:
        done.wait(0.2)
    _kill_group(browser.pid)
    browser.wait()
    time.sleep(0.05)  # children reparented to init get their SIGKILL before the profile goes
    _kill_group(browser.pid)
    shutil.rmtree(profile, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""A collector killed with SIGKILL in the middle of browser rollouts leaves no Chromium
process and no browser profile behind: the browsers' keepers see their pipe close and kill
their process groups (``palaestra/envs/browser/watchdog.py``)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.envs.browser.conftest import browser_processes

ROOT = Path(__file__).resolve().parents[3]


def wait_for(test: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if test():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def test_kill_9_of_a_collector_mid_rollout_leaves_no_browser_behind(tmp_path: Path) -> None:
    # The collector's TMPDIR, so its browsers' profiles are told from anybody else's; short,
    # because Chromium puts a Unix socket there and socket paths end at 108 bytes.
    scratch = Path(tempfile.mkdtemp(prefix="pbk-", dir="/tmp"))
    out = tmp_path / "runs" / "browser.jsonl"
    command = [
        sys.executable, "-m", "palaestra", "collect", "--env", "browser", "--model", "local",
        "--num-tasks", "2", "--concurrency", "2", "--env-arg", "browsers=2",
        "--output", str(out),
    ]  # fmt: skip
    environment = dict(os.environ, TMPDIR=str(scratch), PYTHONPATH=str(ROOT))
    collector = subprocess.Popen(
        command, cwd=tmp_path, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        # two rollouts in flight: two browsers with their page loaded, the model answering
        assert wait_for(lambda: len(list(scratch.glob("palaestra-browser-*"))) >= 2, 120), (
            collector.stderr.read().decode() if collector.poll() is not None else "no browsers"  # type: ignore[union-attr]
        )
        assert wait_for(lambda: len(browser_processes(str(scratch))) >= 2, 30)
        time.sleep(3)
        assert collector.poll() is None, "the collector ended before it could be killed"
        collector.send_signal(signal.SIGKILL)
        collector.wait(timeout=10)
        gone = wait_for(lambda: browser_processes(str(scratch)) == [], 15)
        assert gone, f"Chromium processes left: {browser_processes(str(scratch))}"
        assert wait_for(lambda: list(scratch.iterdir()) == [], 10)  # profiles and temporaries
    finally:
        if collector.poll() is None:
            collector.kill()
            collector.wait()
        if collector.stderr is not None:
            collector.stderr.close()
        shutil.rmtree(scratch, ignore_errors=True)


def test_palaestra_test_browser_passes_its_oracle_and_null_checks_and_leaves_nothing() -> None:
    scratch = Path(tempfile.mkdtemp(prefix="pbt-", dir="/tmp"))
    try:
        done = subprocess.run(
            [sys.executable, "-m", "palaestra", "test", "browser", "--no-model"],
            env=dict(os.environ, TMPDIR=str(scratch), PYTHONPATH=str(ROOT)),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "PASS oracle: replaying the gold actions scores 1 on 10 tasks" in done.stdout
        assert "PASS null agent: doing nothing scores 0 on 10 tasks" in done.stdout
        assert browser_processes(str(scratch)) == []
        assert list(scratch.iterdir()) == []
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

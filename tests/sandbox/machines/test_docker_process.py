"""What the docker provider needs of ``SandboxProcess``: protocol pipes on the program's stdio
(a ``docker exec`` client relays only those), and a hook ``kill`` calls."""

from __future__ import annotations

import asyncio
import os
import subprocess

from palaestra.sandbox.process import SandboxProcess


async def _start(argv: list[str], *, on_stdio: bool) -> SandboxProcess:
    return await SandboxProcess.start(
        lambda _status, _seccomp: argv,
        bubblewrap=False,
        uid=None,
        cwd="/",
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        stdin=subprocess.DEVNULL,
        protocol=True,
        protocol_on_stdio=on_stdio,
    )


async def test_protocol_on_stdio_makes_the_pipes_the_programs_stdin_and_stdout() -> None:
    process = await _start(
        ["sh", "-c", 'read line; echo "got $line ${PALAESTRA_PROTOCOL:-none}"'], on_stdio=True
    )
    try:
        assert process.stdin is not None
        process.stdin.write(b"ping\n")
        assert await asyncio.wait_for(process.stdout.readline(), 10) == b"got ping none\n"
        assert await asyncio.wait_for(process.wait(), 10) == 0
    finally:
        await process.stop()
        process.close()


async def test_the_usual_protocol_keeps_the_programs_stdio_out_of_it() -> None:
    process = await _start(["sh", "-c", 'echo "$PALAESTRA_PROTOCOL"; read x'], on_stdio=False)
    try:
        assert await asyncio.wait_for(process.wait(), 10) == 1  # stdin is /dev/null
        assert await asyncio.wait_for(process.stdout.read(), 10) == b""  # stdout too
    finally:
        process.close()


async def test_kill_calls_the_hook_every_time() -> None:
    process = await _start(["sleep", "100"], on_stdio=True)
    calls: list[int] = []
    process.on_kill = lambda: calls.append(1)
    try:
        process.kill()
        assert await asyncio.wait_for(process.wait(), 10) != 0
        process.kill()
        assert calls == [1, 1]
    finally:
        process.close()

"""The work dir: files in, files out, and nothing of the host reachable through it."""

from __future__ import annotations

import os

from palaestra.sandbox import Sandbox


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_collecting_skips_directories_and_leaks_no_file_descriptor(
    sandbox: Sandbox,
) -> None:
    code = (
        "import os\n"
        "os.mkdir('out.d')\n"
        "os.mkfifo('out.fifo')\n"
        "open('out.txt', 'w').write('mine')\n"
        "os.mkdir('inner')\n"
        "open('inner/kept.txt', 'w').write('inner')\n"
        "os.symlink('inner', 'linked')\n"
    )
    await sandbox.run_python("1")  # the event loop's and the sandbox's own fds are open now
    before = open_fds()
    for _ in range(5):
        result = await sandbox.run_python(code, collect=["out*", "linked/*", "inner"])
        assert result.ok, result.stderr
        assert result.files == {"out.txt": b"mine", "linked/kept.txt": b"inner"}
    assert open_fds() == before

"""Staging a folder into a box: the archive is streamed, never held in memory."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SIZE_MB = 96

MEASURE = textwrap.dedent(
    """
    import resource, sys, tempfile
    from pathlib import Path
    from palaestra.environment.kinds.harbor.boxes import _tar

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with tempfile.TemporaryFile() as archive:
        _tar(Path(sys.argv[1]), archive)
        written = archive.tell()
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(written >> 20, grown >> 10)
    """
)


def test_a_large_tests_folder_is_archived_in_chunks_not_in_memory(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    (tests / "data").mkdir(parents=True)
    chunk = os.urandom(1 << 20)
    for index in range(4):
        with (tests / "data" / f"blob{index}.bin").open("wb") as blob:
            for _ in range(SIZE_MB // 4):
                blob.write(chunk)
    (tests / "test.sh").write_text("#!/bin/bash\n")
    measured = subprocess.run(
        [sys.executable, "-c", MEASURE, str(tests)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[4])},
    )
    written, grown = map(int, measured.stdout.split())
    assert written >= SIZE_MB  # the whole folder went into the archive
    assert grown < 16, f"archiving {SIZE_MB} MB grew the process by {grown} MB"

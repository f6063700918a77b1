"""terminal's shipped archive: the same task folders as before it was one (their digests key
caches and runs), and exactly what its factories build (``scripts/datasets/terminal/build``)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from palaestra.environment.kinds.harbor.tasks import unpacked
from palaestra.envs.terminal.environment import ARCHIVE, Terminal
from palaestra.wire.harbor import folder_digest
from scripts.datasets.terminal.build import PER_FAMILY, SEED, main, pack
from scripts.datasets.terminal.generate import MANIFEST, generate

TASK_DIGESTS = "4aa3abceb9d4efee352889393de1201bc34f63ca163030c3585e5173b93386d7"
"""The SHA-256 of the 184 shipped tasks' ``<id> <folder digest>`` lines (sorted by id), from
the folders as they were shipped before the archive: a change here changes every run's task
rows and cache keys, so it is a new version of the environment, never a side effect."""
SET_DIGEST = "sha256:64981c15fd18540c464b2546539514860b32c77cf4b3176b9d2b553009ba941e"
"""``folder_digest`` of the whole shipped folder then (the manifest included)."""
WHEEL = Path.home() / ".cache" / "palaestra" / "wheels" / "inspect_evals-0.28.0-py3-none-any.whl"
"""inspect_evals' wheel, the AgentBench data (``pip download --no-deps inspect-evals==0.28.0
-d ~/.cache/palaestra/wheels``): only a full rebuild needs it."""


def _digest_lines(folder: Path) -> str:
    ids = sorted(entry["id"] for entry in json.loads((folder / MANIFEST).read_text())["tasks"])
    lines = "".join(f"{task} {folder_digest(folder / task)}\n" for task in ids)
    return hashlib.sha256(lines.encode()).hexdigest()


def test_every_task_digest_is_what_it_was_before_the_archive() -> None:
    folder = unpacked(ARCHIVE)
    assert len(json.loads((folder / MANIFEST).read_text())["tasks"]) == 184
    assert _digest_lines(folder) == TASK_DIGESTS
    assert folder_digest(folder) == SET_DIGEST
    environment_digests = {name: task.digest for name, task in Terminal().tasks.items()}
    manifest = json.loads((folder / MANIFEST).read_text())["tasks"]
    assert environment_digests == {entry["id"]: entry["digest"] for entry in manifest}


def test_the_archive_is_the_generators_folders_packed_byte_for_byte(tmp_path: Path) -> None:
    """The generated families regenerated, AgentBench's folders as shipped (converting them
    needs inspect_evals' wheel: the next test), packed again: the same bytes."""
    shipped = unpacked(ARCHIVE)
    folder = tmp_path / "tasks"
    generate(folder, seed=SEED, per_family=PER_FAMILY)
    (folder / MANIFEST).unlink()
    shutil.copy(shipped / MANIFEST, folder / MANIFEST)
    for task in shipped.glob("agentbench-*"):
        shutil.copytree(task, folder / task.name)
    assert pack(folder) == ARCHIVE.read_bytes()


def test_the_build_command_rebuilds_the_archive_from_the_wheel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not WHEEL.is_file():
        pytest.skip(f"needs {WHEEL} (pip download --no-deps inspect-evals==0.28.0 -d ...)")
    other = tmp_path / "other.tar.xz"
    assert main(["--agentbench", str(WHEEL), "--output", str(other)]) == 0
    assert other.read_bytes() == ARCHIVE.read_bytes()
    other.write_bytes(b"not the archive")
    assert main(["--agentbench", str(WHEEL), "--check", "--output", str(other)]) == 1
    assert "is not what the factories build" in capsys.readouterr().err
    assert other.read_bytes() == b"not the archive"

"""Real builds and boxes: the offline Debian base, kernel overlays, bubblewrap (root only)."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from palaestra.sandbox.machines.rootfs import RootfsProvider

TEST_BASE = Path.home() / ".cache" / "palaestra" / "test-images" / "bookworm-python3.tar"
"""Where the tests keep a base tar while the base image builder is not there."""

DOCKERFILE = """\
# A tiny task image: every instruction the rootfs builder knows.
FROM debian:bookworm-slim
ARG GREETING=hello
LABEL purpose=test
RUN echo "$GREETING $(date +%s%N)" > /built.txt \\
 && useradd -m -u 1234 agent
COPY app/ /app/
COPY notes.txt /app/notes/
WORKDIR /app
ENV MODE=test
RUN chown -R agent:agent /app
USER agent
CMD ["bash"]
"""


def needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("the rootfs provider needs root (kernel overlay mounts)")


@pytest.fixture(scope="session")
def base_tar() -> Path:
    """The offline Debian base (minbase + python3): the base image builder's when it is
    there, else one built here with mmdebstrap once and kept under ~/.cache/palaestra."""
    needs_root()
    try:
        images = importlib.import_module("palaestra.sandbox.machines.images")
    except ImportError:
        images = None
    if images is not None:
        return Path(images.base_tar(build=True))
    if not TEST_BASE.exists():
        TEST_BASE.parent.mkdir(parents=True, exist_ok=True)
        partial = TEST_BASE.with_name(TEST_BASE.name + ".part")
        subprocess.run(
            [
                "mmdebstrap",
                "--variant=minbase",
                "--format=tar",
                "--include=python3",
                "bookworm",
                str(partial),
            ],
            check=True,
            capture_output=True,
        )
        partial.rename(TEST_BASE)
    return TEST_BASE


@pytest.fixture(scope="session")
def layer_cache() -> Iterator[Path]:
    """One layer store for the session (the base is unpacked once)."""
    path = Path(tempfile.mkdtemp(prefix="palaestra-test-rootfs-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def runtime() -> Iterator[Path]:
    """Where the test's boxes live; it must be empty after the test (leases included)."""
    path = Path(tempfile.mkdtemp(prefix="palaestra-test-boxes-"))
    path.chmod(0o711)  # a box's non-root user passes through it
    try:
        yield path
        assert list(path.iterdir()) == [], "the test left boxes or leases behind"
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def provider(base_tar: Path, layer_cache: Path, runtime: Path) -> RootfsProvider:
    return RootfsProvider(cache=layer_cache, runtime=runtime, base=lambda: base_tar)


@pytest.fixture
def context(tmp_path: Path) -> Path:
    """A task's ``environment/`` folder: the Dockerfile above and the files it copies."""
    (tmp_path / "Dockerfile").write_text(DOCKERFILE)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text("print('main')\n")
    (tmp_path / "notes.txt").write_text("some notes\n")
    return tmp_path

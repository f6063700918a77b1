"""Real builds and boxes: the offline Debian base, kernel overlays, bubblewrap (root only)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from palaestra.sandbox.machines.images import base_tar as base_image_tar
from palaestra.sandbox.machines.rootfs import RootfsProvider

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
RUN id -un > /home/agent/who
CMD ["bash"]
"""


def needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("the rootfs provider needs root (kernel overlay mounts)")


@pytest.fixture(scope="session")
def base_tar() -> Path:
    """The offline Debian base (``images.base_tar``), built here once if it is missing."""
    needs_root()
    return base_image_tar(build=True)


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

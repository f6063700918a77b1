"""The offline base image's cache key, its folder digest and its missing-base message (no
daemon needed; the image itself is exercised in test_docker_provider)."""

from __future__ import annotations

from pathlib import Path

import pytest

from palaestra.errors import SandboxFailure
from palaestra.sandbox.machines import images
from palaestra.sandbox.machines.digest import folder_digest


def test_the_folder_digest_sees_content_modes_and_link_targets(tmp_path: Path) -> None:
    (tmp_path / "environment").mkdir()
    (tmp_path / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    (tmp_path / "link").symlink_to("run.sh")
    first = folder_digest(tmp_path)
    assert first == folder_digest(tmp_path)
    script.chmod(0o644)  # executable or not is part of the content
    second = folder_digest(tmp_path)
    (tmp_path / "link").unlink()
    (tmp_path / "link").symlink_to("environment")
    third = folder_digest(tmp_path)
    (tmp_path / "environment" / "Dockerfile").write_text("FROM debian:bookworm\n")
    assert len({first, second, third, folder_digest(tmp_path)}) == 4


def test_the_package_list_is_read_without_comments() -> None:
    names = images.packages()
    assert {"python3", "python3-sympy", "git", "jq"} <= set(names)
    assert all(not name.startswith("#") and " " not in name for name in names)


def test_a_changed_package_list_changes_the_cache_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = images.base_key()
    original = images.packages()
    listing = tmp_path / "packages.txt"
    listing.write_text(images.PACKAGES_FILE.read_text() + "ripgrep  # one more\n")
    monkeypatch.setattr(images, "PACKAGES_FILE", listing)
    assert images.base_key() != before
    listing.write_text("\n".join(reversed(original)))  # the order does not matter
    assert images.base_key() == before


def test_a_missing_base_says_what_to_run_and_builds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PALAESTRA_IMAGES_DIR", str(tmp_path / "images"))
    with pytest.raises(SandboxFailure, match=r"-m palaestra\.sandbox\.machines\.images") as failure:
        images.base_tar()
    assert "\n" not in str(failure.value)
    assert not (tmp_path / "images").exists()

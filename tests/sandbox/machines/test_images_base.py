"""The offline base image's cache key, its folder digest and its missing-base message (no
daemon needed; the image itself is exercised in test_docker_provider)."""

from __future__ import annotations

import io
import tarfile
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


def test_the_packs_are_read_by_section_apart_from_the_base_list() -> None:
    packs = images.packs()
    assert "golang-go" in packs["go"] and {"cargo", "rustc"} <= set(packs["rust"])
    assert not {"golang-go", "cargo", "rustc"} & set(images.packages())


def test_a_package_before_any_pack_is_refused_naming_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listing = tmp_path / "packs.txt"
    listing.write_text("# packs\n\ngolang-go\n[go]\n")
    monkeypatch.setattr(images, "PACKS_FILE", listing)
    with pytest.raises(SandboxFailure, match=r"packs\.txt:3: a package before any \[pack\]"):
        images.packs()


def test_a_missing_pack_says_what_to_run_and_builds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PALAESTRA_IMAGES_DIR", str(tmp_path / "images"))
    with pytest.raises(SandboxFailure, match=r"images --pack go` once") as failure:
        images.pack_tar("go")
    assert "\n" not in str(failure.value)
    with pytest.raises(SandboxFailure, match=r"no pack 'cobol' in debian_packs\.txt"):
        images.pack_tar("cobol")
    assert not (tmp_path / "images").exists()


def _tar(path: Path, files: dict[str, bytes]) -> None:
    with tarfile.open(path, "w") as tar:
        for name, data in files.items():
            member = tarfile.TarInfo(name)
            member.type = tarfile.DIRTYPE if name.endswith("/") else tarfile.REGTYPE
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))


def test_a_built_pack_is_appended_to_the_base_and_names_a_new_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PALAESTRA_IMAGES_DIR", str(tmp_path))
    plain = images.base_path()
    _tar(plain, {"./etc/apt/sources.list": b"deb [trusted=yes] file:/opt/palaestra/debian ./\n"})
    assert images.base_tar() == plain and images.image_key() == images.base_key()
    packs = "./opt/palaestra/packs/"
    _tar(images.pack_path("go"), {packs: b"", f"{packs}go/Packages": b"Package: golang-go\n"})
    _tar(images.pack_path("rust"), {packs: b"", f"{packs}rust/Packages": b"Package: cargo\n"})
    assert images.built_packs() == ["go", "rust"]
    combined = images.base_tar()
    assert combined != plain and images.image_key() != images.base_key()
    assert combined == images.image_path()
    with tarfile.open(combined) as tar:
        names = tar.getnames()
        member = tar.extractfile("./opt/palaestra/packs/go/Packages")
        assert member is not None and member.read() == b"Package: golang-go\n"
    # each path once: docker import refuses a tar that names one twice
    assert names == [
        "./etc/apt/sources.list",
        packs.rstrip("/"),
        f"{packs}go/Packages",
        f"{packs}rust/Packages",
    ]
    with tarfile.open(plain) as tar:  # the base itself is left as it was
        assert tar.getnames() == ["./etc/apt/sources.list"]

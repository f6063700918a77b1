"""The offline base image: Debian bookworm with a local Debian archive inside.

Every task Dockerfile palaestra ships starts ``FROM debian:bookworm-slim`` and installs what it
needs with ``apt-get update && apt-get install -y --no-install-recommends ...``. On a machine
with internet (Harbor elsewhere) that pulls Debian's image and Debian's archive. Here nothing
may be downloaded while rollouts run, so palaestra makes the same image itself, once per
machine, at install time:

- ``mmdebstrap --variant=minbase --include=python3 bookworm``: Debian's own root filesystem,
  made from Debian's own packages (the same distribution the ``debian:bookworm-slim`` image on
  Docker Hub holds);
- plus a local Debian archive at ``/opt/palaestra/debian``: the ``.deb`` files of the packages
  in ``debian_packages.txt`` and everything they depend on, with an index, and
  ``/etc/apt/sources.list`` pointing only at it (``deb [trusted=yes] file:... ./``). So a
  Dockerfile's ``apt-get update && apt-get install`` works with no network: in
  ``docker build --network none`` and in the rootfs provider's builder alike.

The result is a tar (``base_tar``) under ``~/.cache/palaestra/images/``, named by a digest of
the package list, the suite and this recipe: a changed list builds a new base. The Docker
provider imports it into the local daemon as ``debian:bookworm-slim`` and ``debian:bookworm``
(``docker_base``). We tag Debian's names on purpose: the image *is* Debian bookworm, made from
Debian's packages, so a task's Dockerfile stays the one Harbor runs elsewhere, unchanged; what
differs is only where ``apt-get`` finds its packages. A Dockerfile starting from any other
image fails its build with one line naming the image (nothing is pulled).

Building needs Debian's mirror (``deb.debian.org``, or ``PALAESTRA_DEBIAN_MIRROR``) and
``mmdebstrap``; ``scripts/install_machines.sh`` does it. At run time a missing base is an
error saying what to run (``python -m palaestra.sandbox.machines.images``), never a download.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from palaestra.errors import SandboxFailure

SUITE = "bookworm"
ARCHIVE = "/opt/palaestra/debian"
"""Where the local Debian archive lives inside the image."""
TAGS = ("debian:bookworm-slim", "debian:bookworm")
LABEL = "palaestra.base"
"""The image label holding the base's key: an imported image is reused only if it matches."""
RECIPE = "2"
"""Bump when the build below changes in a way the package list does not show."""
PACKAGES_FILE = Path(__file__).with_name("debian_packages.txt")
PATH_ENV = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BUILD_COMMAND = f"{Path(sys.executable).name} -m palaestra.sandbox.machines.images"


def cache_dir() -> Path:
    """``~/.cache/palaestra/images`` (``PALAESTRA_IMAGES_DIR`` overrides)."""
    configured = os.environ.get("PALAESTRA_IMAGES_DIR")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "palaestra" / "images"


def packages() -> list[str]:
    """The package names of ``debian_packages.txt``, in order, without comments."""
    names: list[str] = []
    for line in PACKAGES_FILE.read_text().splitlines():
        names.extend(line.split("#", 1)[0].split())
    return names


def base_key() -> str:
    """The base's cache key: a digest of the suite, the recipe and the sorted package list."""
    text = "\n".join([SUITE, RECIPE, *sorted(set(packages()))])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def base_path() -> Path:
    """Where the base tar of the current package list is (or will be)."""
    return cache_dir() / f"debian-{SUITE}-{base_key()}.tar"


def base_tar(*, build: bool = False, timeout: float = 1800.0) -> Path:
    """The offline base root filesystem as a tar. Built (``build=True``, needs Debian's
    mirror) or found in the cache; missing and not built → ``SandboxFailure`` saying what to
    run. Two processes building at once: one builds, the other waits and reuses it."""
    path = base_path()
    if path.is_file():
        return path
    if not build:
        raise SandboxFailure(
            f"the offline Debian base image is not built ({path}): run "
            f"`{BUILD_COMMAND}` once (it needs Debian's mirror) or scripts/install_machines.sh"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path.parent / ".build.lock"):
        if path.is_file():
            return path
        _build(path, timeout)
    return path


def _build(path: Path, timeout: float) -> None:
    if shutil.which("mmdebstrap") is None:
        raise SandboxFailure(
            "mmdebstrap is not installed: the offline base image is built with it "
            "(apt-get install mmdebstrap, or scripts/install_machines.sh)"
        )
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    mirror = os.environ.get("PALAESTRA_DEBIAN_MIRROR", "http://deb.debian.org/debian")
    command = [
        "mmdebstrap",
        "--quiet",
        "--variant=minbase",
        "--include=python3",
        "--format=tar",
        f"--customize-hook={_archive_hook(packages())}",
        SUITE,
        str(partial),
        f"deb {mirror} {SUITE} main",
    ]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        partial.unlink(missing_ok=True)
        raise SandboxFailure(
            f"building the offline Debian base took over {timeout:.0f}s (mmdebstrap)"
        ) from None
    if result.returncode != 0:
        partial.unlink(missing_ok=True)
        last = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SandboxFailure(f"building the offline Debian base failed (mmdebstrap): {last}")
    os.replace(partial, path)


def _archive_hook(names: list[str]) -> str:
    """mmdebstrap's customize hook (``$1`` is the new root): download the packages and their
    dependencies with the image's own apt (so the closure is exactly what is missing from
    this image), move them into the local archive, index it, and point apt only at it.
    mmdebstrap's cleanup then empties ``/var/lib/apt/lists`` and apt's cache."""
    archive = f'"$1"{ARCHIVE}'
    index = (
        f"cd {archive} && if command -v apt-ftparchive >/dev/null; then"
        " apt-ftparchive packages . > Packages && apt-ftparchive release . > Release;"
        " else dpkg-scanpackages --multiversion . > Packages 2>/dev/null; fi"
    )
    return "; ".join(
        [
            "set -e",
            'chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get install -qq -y'
            f" --download-only --no-install-recommends {shlex.join(names)} >/dev/null",
            f"mkdir -p {archive}",
            'find "$1"/var/cache/apt/archives -maxdepth 1 -name "*.deb"'
            f" -exec mv -t {archive} {{}} +",
            f"({index})",
            'rm -f "$1"/etc/apt/sources.list.d/*',
            f"echo 'deb [trusted=yes] file:{ARCHIVE} ./' > \"$1\"/etc/apt/sources.list",
        ]
    )


@contextlib.contextmanager
def _locked(lock: Path) -> Iterator[None]:
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _docker(*args: str, timeout: float = 600.0, stdin: Path | None = None) -> str:
    if shutil.which("docker") is None:
        raise SandboxFailure("the docker CLI is not installed (scripts/install_machines.sh)")
    with open(stdin, "rb") if stdin is not None else contextlib.nullcontext() as data:
        result = subprocess.run(
            ["docker", *args],
            stdin=data if data is not None else subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
        )
    if result.returncode != 0:
        last = (result.stderr.decode(errors="replace").strip().splitlines() or [""])[-1]
        raise SandboxFailure(f"docker {args[0]} failed: {last}")
    return result.stdout.decode().strip()


def imported_key(tag: str) -> str | None:
    """The base key recorded on the local daemon's image ``tag``, or ``None``."""
    if shutil.which("docker") is None:
        return None
    result = subprocess.run(
        ["docker", "image", "inspect", "--format", f'{{{{index .Config.Labels "{LABEL}"}}}}', tag],
        capture_output=True,
        text=True,
        timeout=60,
    )
    key = result.stdout.strip()
    return key if result.returncode == 0 and key and key != "<no value>" else None


def docker_base(*, build: bool = False) -> str:
    """Import the base tar into the local Docker daemon as ``debian:bookworm-slim`` and
    ``debian:bookworm`` unless they already are this base (their ``palaestra.base`` label
    holds this base's key). Returns the image id."""
    key = base_key()
    if all(imported_key(tag) == key for tag in TAGS):
        return _docker("image", "inspect", "--format", "{{.Id}}", TAGS[0])
    tar = base_tar(build=build)
    changes = [f"LABEL {LABEL}={key}", f"ENV PATH={PATH_ENV}", 'CMD ["bash"]']
    args = ["import", *(arg for change in changes for arg in ("--change", change))]
    image_id = _docker(*args, "-", TAGS[0], stdin=tar)
    for tag in TAGS[1:]:
        _docker("tag", TAGS[0], tag)
    return image_id


def main(argv: list[str] | None = None) -> int:
    """Build the base tar (if missing) and import it into Docker (if a daemon answers)."""
    parser = argparse.ArgumentParser(prog=BUILD_COMMAND, description=main.__doc__)
    parser.add_argument("--no-docker", action="store_true", help="only build the tar")
    parser.add_argument("--print", action="store_true", help="print the tar's path and exit")
    args = parser.parse_args(argv)
    if args.print:
        print(base_path())
        return 0
    try:
        tar = base_tar(build=True)
        print(f"base: {tar} ({tar.stat().st_size / 2**20:.0f} MiB)")
        if not args.no_docker:
            print(f"docker: {', '.join(TAGS)} = {docker_base()}")
    except SandboxFailure as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

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
the package list, the suite and this recipe: a changed list builds a new base.

Toolchains only some tasks need (Go's, Rust's) are **packs** (``debian_packs.txt``): each its
own local archive at ``/opt/palaestra/packs/<name>`` with its own apt source, built only when
a user asks (``--pack NAME``: Debian's mirror again) into a tar of its own
(``pack_tar``). Once a pack is built, the bookworm base is the base tar with every built
pack appended (its own file, named by the digests of both): a machine without packs
downloads and carries none of them. The Docker
provider imports it into the local daemon as ``debian:bookworm-slim`` and ``debian:bookworm``
(``docker_base``). We tag Debian's names on purpose: the image *is* Debian bookworm, made from
Debian's packages, so a task's Dockerfile stays the one Harbor runs elsewhere, unchanged; what
differs is only where ``apt-get`` finds its packages. A Dockerfile starting from any other
image fails its build with one line naming the image (nothing is pulled).

Building needs Debian's mirror (``deb.debian.org``, or ``PALAESTRA_DEBIAN_MIRROR``) and
``mmdebstrap``; ``scripts/install_machines.sh`` does it. At run time a missing base is an
error saying what to run (``python -m palaestra.sandbox.machines.images``), never a download.

A second base, Debian trixie (``debian:trixie-slim``, ``debian:trixie``, ``debian:13-slim``,
``debian:13``), is built the same way for tasks that need Python 3.13: Harbor's Reward Kit
(``harbor-rewardkit``) requires Python 3.12 or later, bookworm's is 3.11. It carries ``pip``
and a local wheelhouse instead of a Debian archive: the kit and everything it depends on,
downloaded on the host from PyPI as CPython 3.13 manylinux wheels into
``~/.cache/palaestra/wheels/rewardkit-<version>`` when the base is built, copied into the image
at ``/opt/palaestra/wheels``, with ``/etc/pip.conf`` pointing ``pip`` only at it. So a
Dockerfile's ``RUN pip install harbor-rewardkit`` works with no network. ``apt-get`` there
reads an empty local archive: a trixie task installs its Debian packages from none.
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
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from palaestra.errors import SandboxFailure


@dataclass(frozen=True)
class Suite:
    """One offline base: the Debian release, the image names it stands for, what
    ``mmdebstrap`` includes, and the Python wheels (pip specs) of its wheelhouse."""

    name: str
    tags: tuple[str, ...]
    include: tuple[str, ...]
    wheels: tuple[str, ...] = ()
    python: str = ""
    """The image's Python (``3.13``): the wheels are downloaded for it."""


REWARDKIT = "harbor-rewardkit==0.2.3"
BOOKWORM = Suite("bookworm", ("debian:bookworm-slim", "debian:bookworm"), ("python3",))
TRIXIE = Suite(
    "trixie",
    ("debian:trixie-slim", "debian:trixie", "debian:13-slim", "debian:13"),
    ("python3", "python3-pip"),
    (REWARDKIT,),
    "3.13",
)
SUITES = {suite.name: suite for suite in (BOOKWORM, TRIXIE)}
ALIASES = {"debian:12-slim": "bookworm", "debian:12": "bookworm"}
"""Names a ``FROM`` may give a base by that are not tagged in Docker."""
SUITE = BOOKWORM.name
ARCHIVE = "/opt/palaestra/debian"
"""Where the local Debian archive lives inside the image."""
PACKS_DIR = "/opt/palaestra/packs"
"""Where each pack's local archive lives inside the image (``<name>/``)."""
WHEELHOUSE = "/opt/palaestra/wheels"
"""Where a base's Python wheels live inside the image."""
TAGS = BOOKWORM.tags


def suite_of(image: str) -> Suite | None:
    """The offline base a ``FROM`` image names, or ``None``."""
    for suite in SUITES.values():
        if image in suite.tags:
            return suite
    alias = ALIASES.get(image)
    return SUITES[alias] if alias else None


LABEL = "palaestra.base"
"""The image label holding the base's key: an imported image is reused only if it matches."""
RECIPE = "2"
"""Bump when the build below changes in a way the package list does not show."""
PACKAGES_FILE = Path(__file__).with_name("debian_packages.txt")
PACKS_FILE = Path(__file__).with_name("debian_packs.txt")
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


def base_key(suite: Suite = BOOKWORM) -> str:
    """The base's cache key: a digest of the suite, the recipe and the sorted package list
    (bookworm), or of the suite, the recipe, its includes and its wheels (the others)."""
    if suite == BOOKWORM:
        text = "\n".join([SUITE, RECIPE, *sorted(set(packages()))])
    else:
        text = "\n".join([suite.name, RECIPE, *suite.include, *suite.wheels, suite.python])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def base_path(suite: Suite = BOOKWORM) -> Path:
    """Where the base tar of the current package list is (or will be)."""
    return cache_dir() / f"debian-{suite.name}-{base_key(suite)}.tar"


def packs() -> dict[str, list[str]]:
    """The packs of ``debian_packs.txt``: each ``[name]`` to its package names, in order."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for number, line in enumerate(PACKS_FILE.read_text().splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if text.startswith("[") and text.endswith("]"):
            current = found.setdefault(text[1:-1].strip(), [])
        elif text and current is None:
            raise SandboxFailure(f"{PACKS_FILE}:{number}: a package before any [pack] line")
        elif text and current is not None:
            current.extend(text.split())
    return found


def pack(name: str) -> list[str]:
    """The packages of the pack ``name``; one line naming the packs when there is none."""
    known = packs()
    if name not in known:
        raise SandboxFailure(
            f"no pack '{name}' in {PACKS_FILE.name} (packs: {', '.join(sorted(known))})"
        )
    return known[name]


def pack_key(name: str) -> str:
    """A pack's cache key: a digest of the suite, the recipe, its name and sorted packages."""
    text = "\n".join([SUITE, RECIPE, "pack", name, *sorted(set(pack(name)))])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def pack_path(name: str) -> Path:
    """Where the pack's tar of the current list is (or will be)."""
    return cache_dir() / f"debian-{SUITE}-pack-{name}-{pack_key(name)}.tar"


def built_packs() -> list[str]:
    """The packs whose tar of the current list is built on this machine, by name."""
    return sorted(name for name in packs() if pack_path(name).is_file())


def image_key(suite: Suite = BOOKWORM) -> str:
    """What the base image is: the base's key alone, or with every built pack's."""
    names = built_packs() if suite == BOOKWORM else []
    if not names:
        return base_key(suite)
    text = "\n".join([base_key(suite), *(f"{name}={pack_key(name)}" for name in names)])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def image_path(suite: Suite = BOOKWORM) -> Path:
    """Where the base tar with the built packs is (``base_path`` when none is built)."""
    return cache_dir() / f"debian-{suite.name}-{image_key(suite)}.tar"


def pack_tar(name: str, *, build: bool = False, timeout: float = 1800.0) -> Path:
    """The pack ``name``'s tar (its archive and apt source, as paths of the image). Built
    (``build=True``, needs Debian's mirror) or found in the cache; missing and not built →
    ``SandboxFailure`` saying what to run."""
    path = pack_path(name)
    if path.is_file():
        return path
    if not build:
        raise SandboxFailure(
            f"the offline Debian {name} pack is not built ({path}): run "
            f"`{BUILD_COMMAND} --pack {name}` once (it needs Debian's mirror)"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path.parent / ".build.lock"):
        if not path.is_file():
            _build_pack(name, path, timeout)
    return path


def base_tar(*, build: bool = False, timeout: float = 1800.0, suite: Suite = BOOKWORM) -> Path:
    """The offline base root filesystem as a tar, with every built pack (bookworm). Built
    (``build=True``, needs Debian's mirror, and PyPI for a suite with wheels) or found in the
    cache; missing and not built → ``SandboxFailure`` saying what to run. Two processes
    building at once: one builds, the other waits and reuses it."""
    plain = _plain_tar(build=build, timeout=timeout, suite=suite)
    names = built_packs() if suite == BOOKWORM else []
    if not names:
        return plain
    path = image_path(suite)
    with _locked(path.parent / ".build.lock"):
        if not path.is_file():
            _append_packs(plain, names, path)
    return path


def _plain_tar(*, build: bool, timeout: float, suite: Suite) -> Path:
    path = base_path(suite)
    if path.is_file():
        return path
    if not build:
        option = "" if suite == BOOKWORM else f" --suite {suite.name}"
        raise SandboxFailure(
            f"the offline Debian {suite.name} base image is not built ({path}): run "
            f"`{BUILD_COMMAND}{option}` once (it needs Debian's mirror) or "
            "scripts/install_machines.sh"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path.parent / ".build.lock"):
        if path.is_file():
            return path
        _build(path, timeout, suite)
    return path


def wheelhouse(suite: Suite, *, timeout: float = 900.0) -> Path:
    """The suite's wheels, downloaded on the host from PyPI for its Python (CPython
    manylinux wheels only: nothing is compiled in the image) into
    ``~/.cache/palaestra/wheels/<name>-<version>``; reused when complete."""
    name, _, version = suite.wheels[0].partition("==")
    short = name.removeprefix("harbor-")
    folder = cache_dir().parent / "wheels" / f"{short}-{version}"
    done = folder / ".complete"
    if done.is_file():
        return folder
    tag = suite.python.replace(".", "")
    platforms = [f"manylinux_2_{minor}_x86_64" for minor in (17, 28, 34, 36)]
    command = [
        sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
        "--only-binary=:all:", "--implementation", "cp", "--python-version", suite.python,
        "--abi", f"cp{tag}", "--abi", "abi3", "--abi", "none",
        *(arg for name in ["manylinux2014_x86_64", *platforms] for arg in ("--platform", name)),
        "--dest", str(folder), "pip", *suite.wheels,
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SandboxFailure(f"downloading the {suite.name} base's wheels failed (pip): {last}")
    done.write_text("\n".join(suite.wheels) + "\n")
    return folder


def _build(path: Path, timeout: float, suite: Suite = BOOKWORM) -> None:
    if shutil.which("mmdebstrap") is None:
        raise SandboxFailure(
            "mmdebstrap is not installed: the offline base image is built with it "
            "(apt-get install mmdebstrap, or scripts/install_machines.sh)"
        )
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    mirror = os.environ.get("PALAESTRA_DEBIAN_MIRROR", "http://deb.debian.org/debian")
    hook = _archive_hook(packages()) if suite == BOOKWORM else _wheels_hook(wheelhouse(suite))
    command = [
        "mmdebstrap",
        "--quiet",
        "--variant=minbase",
        f"--include={','.join(suite.include)}",
        "--format=tar",
        f"--customize-hook={hook}",
        suite.name,
        str(partial),
        f"deb {mirror} {suite.name} main",
    ]
    try:
        _mmdebstrap(command, timeout, "the offline Debian base")
    except SandboxFailure:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, path)


def _mmdebstrap(command: list[str], timeout: float, what: str) -> None:
    """Run ``mmdebstrap``; its failure or timeout is one line naming ``what`` it built."""
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SandboxFailure(f"building {what} took over {timeout:.0f}s (mmdebstrap)") from None
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SandboxFailure(f"building {what} failed (mmdebstrap): {last}")


def _build_pack(name: str, path: Path, timeout: float) -> None:
    """Download the pack's packages and their dependencies (what a fresh base lacks) with
    ``mmdebstrap``'s apt into a scratch directory, index them, and tar them with their apt
    source as the image's paths, owned by root."""
    if shutil.which("mmdebstrap") is None:
        raise SandboxFailure(
            f"mmdebstrap is not installed: the {name} pack is built with it (apt-get install "
            "mmdebstrap, or scripts/install_machines.sh)"
        )
    mirror = os.environ.get("PALAESTRA_DEBIAN_MIRROR", "http://deb.debian.org/debian")
    with tempfile.TemporaryDirectory(prefix=".pack-", dir=path.parent) as scratch:
        root = Path(scratch)
        archive = root / PACKS_DIR.lstrip("/") / name
        hook = "; ".join(
            [
                "set -e",
                _download_command(pack(name)),
                f"mkdir -p {shlex.quote(str(archive))}",
                'find "$1"/var/cache/apt/archives -maxdepth 1 -name "*.deb"'
                f" -exec mv -t {shlex.quote(str(archive))} {{}} +",
                f"({_index_command(shlex.quote(str(archive)))})",
            ]
        )
        command = [
            "mmdebstrap", "--quiet", "--variant=minbase", f"--include={','.join(BOOKWORM.include)}",
            "--format=null", f"--customize-hook={hook}", SUITE, "/dev/null",
            f"deb {mirror} {SUITE} main",
        ]  # fmt: skip
        _mmdebstrap(command, timeout, f"the {name} pack")
        sources = root / "etc/apt/sources.list.d" / f"palaestra-{name}.list"
        sources.parent.mkdir(parents=True)
        sources.write_text(f"deb [trusted=yes] file:{PACKS_DIR}/{name} ./\n")
        partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
        with tarfile.open(partial, "w", format=tarfile.GNU_FORMAT) as tar:
            for member in (PACKS_DIR, f"/etc/apt/sources.list.d/{sources.name}"):
                tar.add(root / member.lstrip("/"), arcname=f".{member}", filter=_root_owned)
        os.replace(partial, path)


def _root_owned(member: tarfile.TarInfo) -> tarfile.TarInfo:
    member.uid = member.gid = 0
    member.uname = member.gname = "root"
    member.mode = 0o755 if member.isdir() else 0o644
    return member


def _append_packs(plain: Path, names: list[str], path: Path) -> None:
    """The base tar with the packs' members after its own, each path once (a pack adds
    paths, it changes none of the base's files)."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        shutil.copyfile(plain, partial)
        with tarfile.open(partial, "a", format=tarfile.GNU_FORMAT) as tar:
            seen = set(tar.getnames())  # Docker refuses a path twice (packs share a directory)
            for name in names:
                with tarfile.open(pack_tar(name)) as source:
                    for member in source:
                        if member.name not in seen:
                            seen.add(member.name)
                            data = source.extractfile(member) if member.isfile() else None
                            tar.addfile(member, data)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, path)


def _download_command(names: list[str]) -> str:
    """Download ``names`` and what they depend on with the new root's apt (``$1``)."""
    return (
        'chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get install -qq -y'
        f" --download-only --no-install-recommends {shlex.join(names)} >/dev/null"
    )


def _index_command(archive: str) -> str:
    """Index the ``.deb`` files in ``archive`` as a flat apt repository."""
    return (
        f"cd {archive} && if command -v apt-ftparchive >/dev/null; then"
        " apt-ftparchive packages . > Packages && apt-ftparchive release . > Release;"
        " else dpkg-scanpackages --multiversion . > Packages 2>/dev/null; fi"
    )


def _archive_hook(names: list[str]) -> str:
    """mmdebstrap's customize hook (``$1`` is the new root): download the packages and their
    dependencies with the image's own apt (so the closure is exactly what is missing from
    this image), move them into the local archive, index it, and point apt only at it.
    mmdebstrap's cleanup then empties ``/var/lib/apt/lists`` and apt's cache."""
    archive = f'"$1"{ARCHIVE}'
    return "; ".join(
        [
            "set -e",
            _download_command(names),
            f"mkdir -p {archive}",
            'find "$1"/var/cache/apt/archives -maxdepth 1 -name "*.deb"'
            f" -exec mv -t {archive} {{}} +",
            f"({_index_command(archive)})",
            'rm -f "$1"/etc/apt/sources.list.d/*',
            f"echo 'deb [trusted=yes] file:{ARCHIVE} ./' > \"$1\"/etc/apt/sources.list",
        ]
    )


def _wheels_hook(wheels: Path) -> str:
    """mmdebstrap's customize hook for a suite with a wheelhouse: copy the wheels in, point
    ``pip`` only at them (no index; the system Python is the image's own, so installing into
    it is allowed), and point apt at an empty local archive (no mirror is reachable)."""
    archive = f'"$1"{ARCHIVE}'
    pip_conf = "\\n".join(
        [
            "[global]",
            "no-index = true",
            f"find-links = {WHEELHOUSE}",
            "break-system-packages = true",
            "root-user-action = ignore",
            "disable-pip-version-check = true",
        ]
    )
    return "; ".join(
        [
            "set -e",
            f'mkdir -p "$1"{WHEELHOUSE} {archive}',
            f'cp {shlex.quote(str(wheels))}/*.whl "$1"{WHEELHOUSE}/',
            f"printf '{pip_conf}\\n' > \"$1\"/etc/pip.conf",
            f": > {archive}/Packages",
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


def docker_base(*, build: bool = False, suite: Suite = BOOKWORM) -> str:
    """Import the base tar (with the built packs) into the local Docker daemon under the
    suite's tags (``debian:bookworm-slim`` and ``debian:bookworm``) unless they already are
    this base (their ``palaestra.base`` label holds its ``image_key``). Returns the image
    id."""
    key = image_key(suite)
    tags = suite.tags
    if all(imported_key(tag) == key for tag in tags):
        return _docker("image", "inspect", "--format", "{{.Id}}", tags[0])
    tar = base_tar(build=build, suite=suite)
    changes = [f"LABEL {LABEL}={key}", f"ENV PATH={PATH_ENV}", 'CMD ["bash"]']
    args = ["import", *(arg for change in changes for arg in ("--change", change))]
    image_id = _docker(*args, "-", tags[0], stdin=tar)
    for tag in tags[1:]:
        _docker("tag", tags[0], tag)
    return image_id


def main(argv: list[str] | None = None) -> int:
    """Build the base tar (if missing), and the packs asked for, and import it into Docker."""
    parser = argparse.ArgumentParser(prog=BUILD_COMMAND, description=main.__doc__)
    parser.add_argument("--no-docker", action="store_true", help="only build the tar")
    parser.add_argument("--print", action="store_true", help="print the tar's path and exit")
    parser.add_argument("--suite", choices=sorted(SUITES), default=SUITE, help="which base")
    parser.add_argument(
        "--pack",
        action="append",
        default=[],
        metavar="NAME",
        help=f"also build this pack of {PACKS_FILE.name} into the bookworm base (repeatable)",
    )
    args = parser.parse_args(argv)
    suite = SUITES[args.suite]
    if args.print:
        print(image_path(suite))
        return 0
    try:
        for name in args.pack:
            built = pack_tar(name, build=True)
            print(f"pack {name}: {built} ({built.stat().st_size / 2**20:.0f} MiB)")
        tar = base_tar(build=True, suite=suite)
        print(f"base: {tar} ({tar.stat().st_size / 2**20:.0f} MiB)")
        if not args.no_docker:
            print(f"docker: {', '.join(suite.tags)} = {docker_base(suite=suite)}")
    except SandboxFailure as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

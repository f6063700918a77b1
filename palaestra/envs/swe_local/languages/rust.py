"""swe_local tasks in Rust: Debian's ``librust-*-dev`` packages, which ship a crate's source
(its tests included, for the crates chosen here) under ``/usr/share/cargo/registry``, tested
with Debian's ``cargo`` and ``rustc``.

The machine copies the crate to ``/testbed``, removes Debian's copy, writes a ``Cargo.lock``
against the registry directory (cargo's source replacement: crates.io is that directory,
offline) and runs ``cargo test --offline --frozen --no-fail-fast --tests`` (the library's unit
tests and the integration tests; no doctests). A test id is ``<crate>::<target>::<path>``:
libtest's name prefixed by the test target (``lib`` for the library's unit tests, the file's
stem for ``tests/<name>.rs``).

A Rust unit test lives in the same file as the code it tests, so the verifier puts back every
file that defines tests other than the ones the bug is in, and the trailing ``#[cfg(test)]``
module of the bug's files; a task lists a test of a bug's file only when the file has such a
module (``verify_native.test_tail``).

Usage::

    python -m palaestra.envs.swe_local.languages.rust --repo semver --quota 20 [--seed 0]
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from palaestra.envs.swe_local.languages.boxes import GITIGNORE, NativeLanguage
from palaestra.envs.swe_local.languages.common import CACHE, Repo, Run, sandboxed
from palaestra.envs.swe_local.languages.generator import Toolchain, main_for
from palaestra.envs.swe_local.languages.treesitter import RUST
from palaestra.envs.swe_local.languages.verify_native import (
    CARGO_CONFIG,
    parse_libtest,
    rust_is_test_file,
    test_tail,
)

REGISTRY = "/usr/share/cargo/registry"


def _repo(crate: str, version: str, license: str, upstream: str, *extras: str) -> Repo:
    return Repo(
        name=crate,
        deb=f"librust-{crate.replace('_', '-')}-dev",
        upstream=upstream,
        license=license,
        source=f"{REGISTRY}/{crate}-{version}",
        module=crate,
        extras=extras,
    )


REPOS: dict[str, Repo] = {
    repo.name: repo
    for repo in (
        _repo("semver", "1.0.14", "MIT OR Apache-2.0", "dtolnay/semver", "librust-serde-dev"),
        _repo("strsim", "0.10.0", "MIT", "dguo/strsim-rs"),
        _repo("heck", "0.4.0", "MIT OR Apache-2.0", "withoutboats/heck"),
        _repo("version-compare", "0.1.1", "MIT", "timvisee/version-compare"),
        _repo("itoa", "1.0.1", "MIT OR Apache-2.0", "dtolnay/itoa"),
        _repo(
            "bytesize",
            "1.1.0",
            "Apache-2.0",
            "hyunsik/bytesize",
            "librust-serde-dev",
            "librust-serde-derive-dev",
        ),
        _repo("unicase", "2.6.0", "MIT OR Apache-2.0", "seanmonstar/unicase"),
        _repo("version_check", "0.9.4", "MIT OR Apache-2.0", "SergioBenitez/version_check"),
    )
}


def parse(text: str, crate: str) -> Run:
    """The run cargo and libtest report (see ``verify_native.parse_libtest``)."""
    report = parse_libtest(text, crate)
    return Run(outcomes=report.outcomes, output=report.output, broken=report.broken)


def defining_file(work: Path, test_id: str) -> str:
    """The file that defines the test ``test_id`` (repository-relative): for the library's
    unit tests, the deepest module file its path names (``a::b::tests::t`` is in
    ``src/a/b.rs`` or ``src/a/b/mod.rs`` or, for inline modules, the closest file above)."""
    _, target, path = test_id.split("::", 2)
    if target != "lib":
        return f"tests/{target}.rs"
    found, directory = "src/lib.rs", "src"
    for part in path.split("::")[:-1]:
        for candidate in (f"{directory}/{part}.rs", f"{directory}/{part}/mod.rs"):
            if (work / candidate).is_file():
                found, directory = candidate, f"{directory}/{part}"
                break
        else:
            break
    return found


def lockfile(work: Path) -> None:
    """Write ``Cargo.lock`` for the crate at ``work`` against Debian's registry, offline."""
    with tempfile.TemporaryDirectory(prefix="swe-cargo-") as home:
        (Path(home) / "config.toml").write_text(CARGO_CONFIG, encoding="utf-8")
        subprocess.run(
            ["/usr/bin/cargo", "generate-lockfile", "--offline"],
            cwd=work,
            env={"PATH": "/usr/bin:/bin", "HOME": home, "CARGO_HOME": home},
            check=True,
            capture_output=True,
        )


class Rust(Toolchain):
    """The Rust side of the generator (see ``generator.Toolchain``)."""

    name = "rust"
    grammar = RUST
    repos = REPOS

    def prepare(self, repo: Repo, work: Path) -> None:
        (work / ".gitignore").write_text(GITIGNORE, encoding="utf-8")
        lockfile(work)

    def sources(self, work: Path) -> list[str]:
        return sorted(path.relative_to(work).as_posix() for path in (work / "src").rglob("*.rs"))

    def scope(self, repo: Repo, relative: str) -> str:
        return ""

    def run(self, work: Path, cache: Path, scope: str, timeout: float) -> Run | None:
        home = cache / "cargo-home"
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(CARGO_CONFIG, encoding="utf-8")
        env = {
            "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "HOME": f"{CACHE}/home",
            "CARGO_HOME": f"{CACHE}/cargo-home",
            "CARGO_TARGET_DIR": f"{CACHE}/target",
            "CARGO_TERM_COLOR": "never",
        }
        # Cargo rebuilds what is older than its last build: the base and the working copy
        # share one target directory, so every run marks the sources as new.
        for path in work.rglob("*.rs"):
            os.utime(path)
        command = ["/usr/bin/cargo", "test", "--offline", "--frozen", "--no-fail-fast", "--tests"]
        done = sandboxed(command, work, cache, env, timeout)
        if done is None:
            return None
        text, seconds = done
        crate = self._crate(work)
        run = parse(text, crate)
        run.seconds = seconds
        return run

    @staticmethod
    def _crate(work: Path) -> str:
        match = re.search(r'^name = "([^"]+)"', (work / "Cargo.toml").read_text(), re.MULTILINE)
        return (match[1] if match else work.name).replace("-", "_")

    def is_test_file(self, path: str) -> bool:
        return rust_is_test_file(path, b"", [])

    def eligible(self, work: Path, test_id: str, gold: str) -> bool:
        """A test of the bug's own file only when the verifier can put that file's test
        module back (``verify_native.test_tail``)."""
        if defining_file(work, test_id) != gold:
            return True
        return test_tail((work / gold).read_bytes()) is not None

    def test_source(self, work: Path, test_id: str) -> str:
        path = work / defining_file(work, test_id)
        name = test_id.rsplit("::", 1)[-1]
        text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        start = text.find(f"fn {name}(")
        if start < 0:
            return ""
        end = text.find("#[test]", start)
        return text[start : end if end >= 0 else len(text)]

    def describe(self, repo: Repo, scope: str) -> tuple[str, str]:
        return (
            f"the Rust crate `{repo.module}`",
            " You can run them with `cargo test --offline`.",
        )


LANGUAGE = NativeLanguage("rust")
"""Rust as a language of the set (``languages.Language``)."""

if __name__ == "__main__":
    sys.exit(main_for(Rust(), sys.argv[1:]))

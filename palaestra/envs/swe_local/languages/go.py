"""swe_local tasks in Go: Debian's ``golang-*-dev`` packages, which ship a module's source with
its ``_test.go`` files under ``/usr/share/gocode/src``, tested with Debian's ``golang-go``.

The machine copies the module to ``/testbed`` (a ``go.mod`` written when the package has none),
removes Debian's copy, and runs ``go test -json`` in module mode with no proxy
(``GOPROXY=off``, ``GOFLAGS=-mod=readonly``): the repositories here need nothing beyond the
standard library. A test id is ``<import path>/<TestName>`` as ``go test -json`` names the
package and the top-level test (a failing subtest fails its parent; its output is kept).

Usage::

    python -m palaestra.envs.swe_local.languages.go --repo go-cmp --quota 20 [--seed 0]
"""

from __future__ import annotations

import sys
from pathlib import Path

from palaestra.envs.swe_local.languages.boxes import NativeLanguage
from palaestra.envs.swe_local.languages.common import CACHE, Repo, Run, sandboxed
from palaestra.envs.swe_local.languages.generator import Toolchain, main_for
from palaestra.envs.swe_local.languages.treesitter import GO
from palaestra.envs.swe_local.languages.verify_native import GO_ENV, go_is_test_file, parse_go

GOCODE = "/usr/share/gocode/src"


def _repo(name: str, module: str, license: str, *, whole: bool = False) -> Repo:
    """A repository of Debian's ``golang-github-<owner>-<name>-dev``."""
    deb = "golang-" + module.replace("github.com", "github").replace("/", "-").lower() + "-dev"
    return Repo(
        name=name,
        deb=deb,
        upstream=module.removeprefix("github.com/"),
        license=license,
        source=f"{GOCODE}/{module}",
        module=module,
        whole=whole,
    )


REPOS: dict[str, Repo] = {
    repo.name: repo
    for repo in (
        _repo("go-cmp", "github.com/google/go-cmp", "BSD-3-Clause"),
        _repo("go-difflib", "github.com/pmezard/go-difflib", "BSD-3-Clause"),
        _repo("go-spew", "github.com/davecgh/go-spew", "ISC"),
        _repo("xxhash", "github.com/cespare/xxhash", "MIT"),
        _repo("go-humanize", "github.com/dustin/go-humanize", "MIT"),
        _repo("uuid", "github.com/google/uuid", "BSD-3-Clause"),
        _repo("golang-lru", "github.com/hashicorp/golang-lru", "MPL-2.0"),
        _repo("blang-semver", "github.com/blang/semver", "MIT"),
        _repo("go-shellquote", "github.com/kballard/go-shellquote", "MIT"),
        _repo("glob", "github.com/gobwas/glob", "MIT"),
        _repo("uniseg", "github.com/rivo/uniseg", "MIT"),
        _repo("go-radix", "github.com/armon/go-radix", "MIT"),
        _repo("smetrics", "github.com/xrash/smetrics", "MIT", whole=True),
        _repo("xstrings", "github.com/huandu/xstrings", "MIT"),
        _repo("masterminds-semver", "github.com/Masterminds/semver", "MIT"),
        _repo("go-version", "github.com/hashicorp/go-version", "MPL-2.0"),
    )
}

ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", **GO_ENV}
"""The Go environment of both the generator's runs and the machine's (``go env`` would
otherwise reach for a proxy or a C compiler the machine does not have)."""


def is_test_file(path: str) -> bool:
    """Whether a tracked file belongs to the tests (what the verifier puts back)."""
    return go_is_test_file(path)


def go_mod(repo: Repo) -> str:
    """The ``go.mod`` the machine writes when the package ships none."""
    return f"module {repo.module}\n\ngo 1.19\n"


def parse_events(text: str) -> Run:
    """The run ``go test -json`` reports (see ``verify_native.parse_go``)."""
    report = parse_go(text)
    return Run(outcomes=report.outcomes, output=report.output, broken=report.broken)


def _package_dir(relative: str) -> str:
    parent = str(Path(relative).parent)
    return "." if parent == "." else f"./{parent}"


class Go(Toolchain):
    """The Go side of the generator (see ``generator.Toolchain``)."""

    name = "go"
    grammar = GO
    repos = REPOS

    def prepare(self, repo: Repo, work: Path) -> None:
        if not (work / "go.mod").exists():
            (work / "go.mod").write_text(go_mod(repo), encoding="utf-8")

    def sources(self, work: Path) -> list[str]:
        return sorted(
            path.relative_to(work).as_posix()
            for path in work.rglob("*.go")
            if not is_test_file(path.relative_to(work).as_posix())
            and not any(part.startswith((".", "_")) for part in path.relative_to(work).parts)
            and "example" not in path.relative_to(work).parts
        )

    def scope(self, repo: Repo, relative: str) -> str:
        return "./..." if repo.whole else _package_dir(relative)

    def run(self, work: Path, cache: Path, scope: str, timeout: float) -> Run | None:
        env = {
            **ENV,
            "HOME": f"{CACHE}/home",
            "GOCACHE": f"{CACHE}/go-build",
            "GOPATH": f"{CACHE}/gopath",
        }
        done = sandboxed(
            ["/usr/bin/go", "test", "-json", "-count=1", scope], work, cache, env, timeout
        )
        if done is None:
            return None
        text, seconds = done
        run = parse_events(text)
        run.seconds = seconds
        return run

    def is_test_file(self, path: str) -> bool:
        return is_test_file(path)

    def test_source(self, work: Path, test_id: str) -> str:
        package, _, name = test_id.rpartition("/")
        relative = package.removeprefix(self.module_of(work)).strip("/")
        for path in sorted((work / relative).glob("*_test.go")):
            text = path.read_text(encoding="utf-8", errors="replace")
            start = text.find(f"\nfunc {name}(")
            if start >= 0:
                end = text.find("\nfunc ", start + 1)
                return text[start : end if end >= 0 else len(text)]
        return ""

    def module_of(self, work: Path) -> str:
        """The module path ``go.mod`` declares."""
        for line in (work / "go.mod").read_text(encoding="utf-8").splitlines():
            if line.startswith("module "):
                return line.split()[1].strip('"')
        return ""

    def describe(self, repo: Repo, scope: str) -> tuple[str, str]:
        target = "." if scope == "." else scope
        return (
            f"the Go module `{repo.module}`",
            f" You can run them with `go test {target}`.",
        )


LANGUAGE = NativeLanguage("go")
"""Go as a language of the set (``languages.Language``)."""

if __name__ == "__main__":
    sys.exit(main_for(Go(), sys.argv[1:]))

"""The verifier's steps for Go and Rust tasks, shipped in each task as ``tests/verify_native.py``
beside ``tests/verify.py`` (the text of ``verifier.py``, whose git and file handling it uses).

``tests/test.sh`` runs this file as root with ``python3 -I -S`` after the agent's processes
are gone; it uses the standard library and ``verify.py`` only, never palaestra.

- ``prepare SCRATCH``: ``/testbed`` put back to the base commit's tree read from git's objects
  as the test uid and checked against their ids (``verify.py``), every untracked path removed,
  the agent's changes to the tracked files kept, except the tests, put back as the base had
  them: Go's ``*_test.go``, ``testdata/``, ``go.mod`` and ``go.sum``; Rust's ``Cargo.toml``,
  ``Cargo.lock``, ``build.rs``, ``tests/``, ``benches/``, ``examples/``, every ``.rs`` file
  that defines tests other than the bug's own files, and the trailing ``#[cfg(test)]`` module
  of the bug's files (a Rust unit test sits beside the code: the agent's changes above it are
  kept, the module is the base's; a task lists no test of a bug's file without such a module).
  A repository that cannot give the base is a 0.
- ``command OUT``: the test command, one argument a line, for ``test.sh`` to run as the test
  uid with ``OUT`` (the test uid's directory) for caches: ``go test -json`` of the listed
  tests' packages and names, or ``cargo test --offline --frozen --no-fail-fast --tests``.
- ``judge REPORT``: each listed test's own outcome in the runner's output (which root read from
  a pipe, never a file the tests could rewrite): reward 1 when every one passed, else 0 (a test
  missing, failed or skipped is 0; the exit status plays no part).

What it does not protect: the agent's changes to the code under test run inside the test
process; code written to print forged result lines is not caught here (it is in the diff).
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING or __name__ != "__main__":
    from palaestra.envs.swe_local import verifier as base
else:  # in the task: verifier.py's text is tests/verify.py, beside this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    base = importlib.import_module("verify")

REPORT_CAP = 64 << 20
GO_ENV = {
    "GOPROXY": "off",
    "GOFLAGS": "-mod=readonly",
    "GOTOOLCHAIN": "local",
    "GO111MODULE": "on",
    "GOSUMDB": "off",
    "GOTELEMETRY": "off",
    "CGO_ENABLED": "0",
    "GOWORK": "off",
}
"""The Go environment of the machine's test run (no proxy, no C compiler, and no workspace:
a ``go.work`` above ``/testbed`` would choose which module's tests run)."""
CARGO_CONFIG = (
    "[source.crates-io]\n"
    'replace-with = "debian"\n'
    "[source.debian]\n"
    'directory = "/usr/share/cargo/registry"\n'
    "[net]\n"
    "offline = true\n"
)
"""``$CARGO_HOME/config.toml``: crates.io is Debian's registry directory, offline."""


@dataclass
class Report:
    """What a runner's output says: each test's outcome and output, or why it has none."""

    outcomes: dict[str, str] = field(default_factory=dict)
    output: dict[str, str] = field(default_factory=dict)
    broken: str = ""


def go_is_test_file(path: str) -> bool:
    """Go's tests: ``*_test.go``, ``testdata/``, ``go.mod``, ``go.sum``."""
    *parents, name = path.split("/")
    return name.endswith("_test.go") or "testdata" in parents or name in ("go.mod", "go.sum")


def rust_is_test_file(path: str, text: bytes, gold: list[str]) -> bool:
    """Rust's tests: the manifest, lock and build script, ``tests/``, ``benches/``,
    ``examples/``, and any ``.rs`` file defining tests other than the ``gold`` files."""
    *parents, name = path.split("/")
    if name in ("Cargo.toml", "Cargo.lock", "build.rs") or path.startswith(".cargo/"):
        return True
    if parents and parents[0] in ("tests", "benches", "examples"):
        return True
    return (
        name.endswith(".rs") and path not in gold and (b"#[test]" in text or b"cfg(test)" in text)
    )


def test_tail(text: bytes) -> int | None:
    """Where a Rust file's trailing test module starts (a line ``#[cfg(test)]`` at column 0,
    then ``mod <name> {``, the file ending with its closing brace at column 0, and no
    ``#[test]`` before it), or None. A bug's file keeps the agent's changes above it; the
    module itself is put back as the base had it."""
    at = text.rfind(b"\n#[cfg(test)]\n")
    if at < 0:
        return None
    start = at + 1
    lines = text[start:].split(b"\n", 2)
    if len(lines) < 3 or not re.fullmatch(rb"(pub )?mod \w+ \{", lines[1]):
        return None
    if not text.rstrip().endswith(b"\n}") or b"#[test]" in text[:start]:
        return None
    return start


def with_base_tests(agent: bytes, base_text: bytes) -> bytes | None:
    """The agent's version of a bug's file with its trailing test module put back as the base
    had it (the agent's text from the module's last opening line on is dropped; a file
    without it gets the base's module appended); None when the base has no test tail."""
    start = test_tail(base_text)
    if start is None:
        return None
    opening = b"\n".join(base_text[start:].split(b"\n", 2)[:2])
    at = agent.rfind(b"\n" + opening)
    head = agent[: at + 1] if at >= 0 else agent.rstrip(b"\n") + b"\n\n"
    return head + base_text[start:]


def parse_go(text: str) -> Report:
    """Each top-level test's outcome and output from ``go test -json``'s stream, keyed
    ``<package>/<Test>``; ``broken`` when a package did not build."""
    report = Report()
    errors: list[str] = []
    for raw in text.splitlines():
        try:
            event = json.loads(raw)
        except ValueError:
            if raw.strip() and not raw.startswith(("ok ", "FAIL\t", "FAIL ")):
                errors.append(raw)
            continue
        if not isinstance(event, dict):
            continue
        package, test = str(event.get("Package", "")), str(event.get("Test", ""))
        action, output = event.get("Action"), str(event.get("Output", ""))
        if not test:
            if "[build failed]" in output or "[setup failed]" in output:
                report.broken = output.strip()
            continue
        top = test.split("/", 1)[0]
        key = f"{package}/{top}"
        if action == "output":
            report.output[key] = report.output.get(key, "") + output
        elif action in ("pass", "fail", "skip") and test == top:
            outcome = {"pass": "passed", "fail": "failed", "skip": "skipped"}[str(action)]
            if report.outcomes.get(key, "passed") == "passed":
                report.outcomes[key] = outcome
    if errors and not report.outcomes:
        report.broken = report.broken or "\n".join(errors[:10])
    return report


_RUNNING = re.compile(r"^\s*Running (?:unittests )?(\S+) \((?:.*/)?([^/()]+?)(?:-[0-9a-f]{16})?\)$")
_RESULT = re.compile(r"^test (\S+)(?: - should panic)? \.\.\. (ok|FAILED|ignored.*)$")
_SECTION = re.compile(r"^---- (\S+) stdout ----$")


def rust_target(path: str, binary: str) -> str:
    """The test target of cargo's ``Running`` line: ``lib`` for the library's unit tests,
    a binary's name for its own, the file's stem for ``tests/<name>.rs``."""
    if path == "src/lib.rs":
        return "lib"
    return binary.replace("-", "_") if path.startswith("src/") else Path(path).stem


def parse_libtest(text: str, crate: str) -> Report:
    """Each test's outcome and captured output from cargo's and libtest's text, keyed
    ``<crate>::<target>::<path>``; ``broken`` when the crate did not compile. Only a target's
    lines before its ``failures:`` section count as results (a failing test's captured output,
    printed there, adds none); a test reported twice keeps its worst outcome."""
    report = Report()
    target, in_results, section = "", False, ""
    errors: list[str] = []
    for line in text.splitlines():
        running = _RUNNING.match(line)
        if running:
            target, in_results, section = rust_target(running[1], running[2]), True, ""
            continue
        if line.startswith(("error[", "error: could not compile", "error: aborting")):
            errors.append(line)
        if not target:
            continue
        if line == "failures:" or line.startswith("test result:"):
            in_results, section = False, ""
            continue
        result = _RESULT.match(line)
        if result and in_results:
            key = f"{crate}::{target}::{result[1]}"
            outcome = {"ok": "passed", "FAILED": "failed"}.get(result[2], "skipped")
            if report.outcomes.get(key, "passed") == "passed":
                report.outcomes[key] = outcome
            continue
        header = _SECTION.match(line)
        if header and not in_results:
            section = f"{crate}::{target}::{header[1]}"
            continue
        if section:
            report.output[section] = report.output.get(section, "") + line + "\n"
    if errors and not report.outcomes:
        report.broken = "\n".join(errors[:10])
    return report


@dataclass(frozen=True)
class Config:
    """What ``tests/config.json`` tells this verifier."""

    language: str
    base_tree: str
    ids: list[str]
    gold: list[str]
    """The files of the bug (Rust: the agent's changes to them are kept)."""


def load_config(path: Path = base.CONFIG) -> Config:
    data = json.loads(path.read_text(encoding="utf-8"))
    return Config(
        language=str(data["language"]),
        base_tree=str(data["base_tree"]),
        ids=[str(test) for test in [*data["FAIL_TO_PASS"], *data["PASS_TO_PASS"]]],
        gold=[str(path) for path in data["files"]],
    )


def restore(
    config: Config, root: Path, files: dict[str, base.Entry], objects: base.Objects
) -> list[str]:
    """Put every test file of the base back as it was (see the module's docstring); the
    paths put back. What the base had is read from its objects, never from ``root``."""
    restored: list[str] = []
    if config.language == "rust":
        for path in sorted(set(config.gold) & set(files)):
            blob = files[path].blob
            if path.endswith(".rs") and _put_back_tests(root / path, objects.read(blob, "blob")):
                restored.append(f"{path} (its test module)")

    def protected(path: str, entry: base.Entry) -> bool:
        if config.language == "go":
            return go_is_test_file(path)
        if path in config.gold and path.endswith(".rs"):
            return False  # its test module is put back above, the agent's changes kept
        text = objects.read(entry.blob, "blob") if path.endswith(".rs") else b""
        return rust_is_test_file(path, text, config.gold)

    return restored + base.restore(root, files, objects, protected)


def _clean_above(config: Config, root: Path) -> list[str]:
    """Remove what the toolchain would read from the directories above ``root``: cargo reads
    ``.cargo/config.toml`` in each (a runner, a linker or flags named there would decide what
    the tests report). Go's workspace file is switched off instead (``GO_ENV``). Only in the
    machine (``root`` is ``/testbed``): a test's repository elsewhere has the host above it."""
    removed: list[str] = []
    if config.language != "rust" or root != base.TESTBED:
        return removed
    for parent in root.parents:
        above = parent / ".cargo"
        if above.exists() or above.is_symlink():
            base._remove(above)
            removed.append(f"{above} (removed: a cargo configuration above {root})")
    return removed


def _put_back_tests(target: Path, base_text: bytes) -> bool:
    """Put a bug's file's trailing test module back (``with_base_tests``); whether it changed
    anything. A file that is not a regular file is left to ``clean``, which removed it."""
    if target.is_symlink() or not target.is_file():
        return False
    agent = target.read_bytes()
    fixed = with_base_tests(agent, base_text)
    if fixed is None or fixed == agent:
        return False
    base.put_back(target, fixed, "100644")
    return True


def prepare(config: Config, root: Path, scratch: Path, rewards: Path = base.REWARD_DIR) -> int:
    """``/testbed`` as the base with the agent's fix; 0, or ``DAMAGED`` (reward 0 written)."""

    def tests(root: Path, files: dict[str, base.Entry], objects: base.Objects) -> list[str]:
        return _clean_above(config, root) + restore(config, root, files, objects)

    return base.put_back_base(config.base_tree, root, scratch, rewards, tests)


def command(config: Config, out: Path) -> list[str]:
    """The test run's command line (``env -i`` and its variables first), caches in ``out``."""
    common = [f"HOME={out}/home", f"TMPDIR={out}/tmp", "PATH=/usr/bin:/bin", "LANG=C.UTF-8"]
    if config.language == "go":
        packages = sorted({test.rpartition("/")[0] for test in config.ids})
        names = sorted({re.escape(test.rpartition("/")[2]) for test in config.ids})
        variables = [f"{key}={value}" for key, value in GO_ENV.items()]
        variables += [f"GOCACHE={out}/gocache", f"GOPATH={out}/gopath"]
        run = ["go", "test", "-json", "-count=1", "-run", f"^({'|'.join(names)})$", *packages]
    else:
        home = out / "cargo-home"
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(CARGO_CONFIG, encoding="utf-8")
        variables = [
            f"CARGO_HOME={home}",
            f"CARGO_TARGET_DIR={out}/target",
            "CARGO_TERM_COLOR=never",
        ]
        run = ["cargo", "test", "--offline", "--frozen", "--no-fail-fast", "--tests"]
    return ["env", "-i", *common, *variables, *run]


def read_report(path: Path) -> str:
    """The runner's output root saved at ``path`` (at most ``REPORT_CAP`` bytes read)."""
    try:
        with path.open("rb") as file:
            return file.read(REPORT_CAP).decode("utf-8", "replace")
    except OSError:
        return ""


def judge(config: Config, report_path: Path, rewards: Path = base.REWARD_DIR) -> int:
    """Write the reward from each listed test's own outcome in the report; 0."""
    text = read_report(report_path)
    if config.language == "go":
        report = parse_go(text)
    else:
        crate = config.ids[0].split("::", 1)[0] if config.ids else ""
        report = parse_libtest(text, crate)
    if report.broken:
        print(f"the code does not build:\n{report.broken}")
    return base.decide(config.ids, report.outcomes, rewards)


def main(argv: list[str]) -> int:
    config = load_config()
    if argv[:1] == ["prepare"] and len(argv) == 2:
        return prepare(config, base.TESTBED, Path(argv[1]))
    if argv[:1] == ["command"] and len(argv) == 2:
        print("\n".join(command(config, Path(argv[1]))))
        return 0
    if argv[:1] == ["judge"] and len(argv) == 2:
        return judge(config, Path(argv[1]))
    print("usage: verify_native.py prepare SCRATCH | command OUT | judge REPORT", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

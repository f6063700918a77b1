"""The Rust generator's reading of cargo and libtest, on a tiny crate written here."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from palaestra.envs.swe_local.languages.rust import Rust, defining_file, parse
from palaestra.envs.swe_local.languages.verify_native import (
    rust_is_test_file,
    with_base_tests,
)
from palaestra.envs.swe_local.languages.verify_native import (
    test_tail as tail_start,
)

needs_cargo = pytest.mark.skipif(
    not Path("/usr/bin/cargo").exists() or shutil.which("bwrap") is None,
    reason="needs Debian's cargo and bubblewrap",
)

OUTPUT = """\
   Compiling clamp v0.1.0 (/testbed)
    Finished test [unoptimized + debuginfo] target(s) in 1.00s
     Running unittests src/lib.rs (/cache/target/debug/deps/clamp-0123456789abcdef)

running 2 tests
test range::tests::width ... ok
test tests::below ... FAILED

failures:

---- tests::below stdout ----
test tests::above ... ok
thread 'tests::below' panicked at 'assertion failed: `(left == right)`
  left: `-5`,
 right: `0`', src/lib.rs:20:9

failures:
    tests::below

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out

     Running tests/edges.rs (/cache/target/debug/deps/edges-fedcba9876543210)

running 2 tests
test far::above ... ok
test slow ... ignored

test result: ok. 1 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out
"""


def test_each_test_is_named_by_crate_target_and_path_with_its_outcome() -> None:
    run = parse(OUTPUT, "clamp")
    assert run.outcomes == {
        "clamp::lib::range::tests::width": "passed",
        "clamp::lib::tests::below": "failed",
        "clamp::edges::far::above": "passed",
        "clamp::edges::slow": "skipped",
    }
    assert "left: `-5`" in run.output["clamp::lib::tests::below"]


def test_a_result_line_in_a_failing_tests_output_is_not_a_result() -> None:
    """``tests::above`` appears only in ``tests::below``'s captured output."""
    assert "clamp::lib::tests::above" not in parse(OUTPUT, "clamp").outcomes


def test_a_compile_error_is_a_broken_run() -> None:
    text = "error[E0308]: mismatched types\nerror: could not compile `clamp` due to 1 error\n"
    assert parse(text, "clamp").broken.startswith("error[E0308]")


def test_a_unit_test_is_defined_in_its_module_file(tmp_path: Path) -> None:
    (tmp_path / "src" / "range").mkdir(parents=True)
    for name in ("lib.rs", "range/mod.rs", "range/parse.rs"):
        (tmp_path / "src" / name).write_text("")
    assert defining_file(tmp_path, "clamp::lib::tests::below") == "src/lib.rs"
    assert defining_file(tmp_path, "clamp::lib::range::tests::width") == "src/range/mod.rs"
    assert defining_file(tmp_path, "clamp::lib::range::parse::tests::t") == "src/range/parse.rs"
    assert defining_file(tmp_path, "clamp::edges::far::above") == "tests/edges.rs"


def test_files_defining_tests_are_put_back_unless_the_bug_is_in_them() -> None:
    assert rust_is_test_file("Cargo.toml", b"", [])
    assert rust_is_test_file("tests/edges.rs", b"", [])
    assert rust_is_test_file("src/range.rs", b"#[cfg(test)]\nmod tests {}", ["src/lib.rs"])
    assert not rust_is_test_file("src/range.rs", b"#[cfg(test)]\nmod tests {}", ["src/range.rs"])
    assert not rust_is_test_file("src/lib.rs", b"pub fn f() {}", [])


LIB = """pub fn clamp(v: i64, lo: i64, hi: i64) -> i64 {
    if v < lo {
        return lo;
    }
    if v > hi {
        return hi;
    }
    v
}
"""
EDGES = """#[test]
fn below() { assert_eq!(clamp::clamp(-5, 0, 10), 0); }
#[test]
fn above() { assert_eq!(clamp::clamp(50, 0, 10), 10); }
"""


@needs_cargo
def test_a_crate_runs_offline_in_the_sandbox_with_per_test_outcomes(tmp_path: Path) -> None:
    crate = tmp_path / "crate"
    (crate / "src").mkdir(parents=True)
    (crate / "tests").mkdir()
    (crate / "Cargo.toml").write_text('[package]\nname = "clamp"\nversion = "0.1.0"\n')
    (crate / "src" / "lib.rs").write_text(LIB.replace("v > hi", "v > hi + 100"))
    (crate / "tests" / "edges.rs").write_text(EDGES)
    tool = Rust()
    tool.prepare(tool.repos["itoa"], crate)
    assert (crate / "Cargo.lock").is_file()
    run = tool.run(crate, tmp_path / "cache", "", 300.0)
    assert run is not None and not run.broken
    assert run.outcomes == {"clamp::edges::below": "passed", "clamp::edges::above": "failed"}
    assert "right: `10`" in run.output["clamp::edges::above"]


BASE = b"""pub fn clamp(v: i64) -> i64 {
    v.max(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn negative() {
        assert_eq!(super::clamp(-1), 0);
    }
}
"""


def test_a_bugs_file_keeps_the_agents_code_and_gets_its_test_module_back() -> None:
    fixed_code = BASE.replace(b"v.max(0)", b"if v < 0 { 0 } else { v }")
    silenced = fixed_code.replace(b"assert_eq!(super::clamp(-1), 0);", b"")
    assert with_base_tests(silenced, BASE) == fixed_code


def test_a_test_module_the_agent_removed_or_duplicated_is_the_base_one_again() -> None:
    removed = BASE[: BASE.index(b"#[cfg(test)]")].rstrip() + b"\n"
    assert with_base_tests(removed, BASE) == BASE
    tail = BASE[BASE.index(b"#[cfg(test)]") :]
    forged = tail.replace(b"assert_eq!(super::clamp(-1), 0);", b"")
    doubled = BASE.replace(tail, forged) + b"\n" + forged
    assert with_base_tests(doubled, BASE) == BASE.replace(tail, forged) + b"\n" + tail


def test_a_file_whose_tests_are_not_one_trailing_module_has_no_test_tail() -> None:
    assert tail_start(BASE) == BASE.index(b"#[cfg(test)]")
    assert tail_start(b"#[test]\nfn t() {}\n" + BASE) is None
    assert tail_start(BASE + b"pub fn after() {}\n") is None
    assert with_base_tests(b"anything", b"pub fn f() {}\n") is None


@needs_cargo
def test_the_base_after_a_mutation_is_built_again_not_taken_from_the_cache(
    tmp_path: Path,
) -> None:
    """The base's files are older than the mutated copy's build in the shared target
    directory; its run must still be of its own code."""
    tool = Rust()
    copies = {}
    for name, library in (("base", LIB), ("mutated", LIB.replace("v > hi", "v > hi + 100"))):
        crate = tmp_path / name
        (crate / "src").mkdir(parents=True)
        (crate / "tests").mkdir()
        (crate / "Cargo.toml").write_text('[package]\nname = "clamp"\nversion = "0.1.0"\n')
        (crate / "src" / "lib.rs").write_text(library)
        (crate / "tests" / "edges.rs").write_text(EDGES)
        tool.prepare(tool.repos["itoa"], crate)
        copies[name] = crate
    for path in copies["base"].rglob("*.rs"):
        os.utime(path, (1_000_000_000, 1_000_000_000))  # as Debian's files: long ago
    cache = tmp_path / "cache"
    mutated = tool.run(copies["mutated"], cache, "", 300.0)
    assert mutated is not None and mutated.outcomes["clamp::edges::above"] == "failed"
    base = tool.run(copies["base"], cache, "", 300.0)
    assert base is not None and base.outcomes["clamp::edges::above"] == "passed"

"""The Go generator on a tiny module written here: go test -json's outcomes, a build failure,
and a whole generation run that writes a resumable manifest line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from palaestra.envs.swe_local.languages.common import Repo, Run, decide
from palaestra.envs.swe_local.languages.generator import generate, mark_duplicates
from palaestra.envs.swe_local.languages.go import Go, is_test_file, parse_events
from palaestra.envs.swe_local.manifest import sealed as with_digest

pytestmark = pytest.mark.skipif(
    shutil.which("go") is None or shutil.which("bwrap") is None,
    reason="needs Debian's golang-go and bubblewrap",
)

MODULE = "example.com/clamp"
LIBRARY = """package clamp

// Clamp keeps v within [lo, hi].
func Clamp(v, lo, hi int) int {
\tif v < lo {
\t\treturn lo
\t}
\tif v > hi {
\t\treturn hi
\t}
\treturn v
}

// Double is twice v.
func Double(v int) int { return v * 2 }
"""
TESTS = """package clamp

import "testing"

func TestBelow(t *testing.T) {
\tif got := Clamp(-5, 0, 10); got != 0 {
\t\tt.Errorf("Clamp(-5, 0, 10) = %d, want 0", got)
\t}
}

func TestAbove(t *testing.T) {
\tif got := Clamp(50, 0, 10); got != 10 {
\t\tt.Errorf("Clamp(50, 0, 10) = %d, want 10", got)
\t}
}

func TestInside(t *testing.T) {
\tt.Run("middle", func(t *testing.T) {
\t\tif Clamp(5, 0, 10) != 5 {
\t\t\tt.Fatal("middle moved")
\t\t}
\t})
}

func TestDouble(t *testing.T) {
\tif Double(4) != 8 {
\t\tt.Fatal("Double(4) != 8")
\t}
}
"""


@pytest.fixture
def module(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    root.mkdir()
    (root / "clamp.go").write_text(LIBRARY)
    (root / "clamp_test.go").write_text(TESTS)
    return root


def ids(*names: str) -> list[str]:
    return [f"{MODULE}/{name}" for name in names]


def test_each_top_level_test_has_its_outcome_and_a_failing_one_its_output(
    module: Path, tmp_path: Path
) -> None:
    (module / "go.mod").write_text(f"module {MODULE}\n\ngo 1.19\n")
    (module / "clamp.go").write_text(LIBRARY.replace("v > hi", "v >= hi+1 && false"))
    run = Go().run(module, tmp_path / "cache", ".", 120.0)
    assert run is not None and not run.broken
    assert run.outcomes == {
        **dict.fromkeys(ids("TestBelow", "TestInside", "TestDouble"), "passed"),
        f"{MODULE}/TestAbove": "failed",
    }
    assert "Clamp(50, 0, 10) = 50, want 10" in run.output[f"{MODULE}/TestAbove"]


def test_code_that_does_not_compile_is_a_broken_run_not_failing_tests(
    module: Path, tmp_path: Path
) -> None:
    (module / "go.mod").write_text(f"module {MODULE}\n\ngo 1.19\n")
    (module / "clamp.go").write_text(LIBRARY.replace("return v * 2", "return v * 2.5"))
    run = Go().run(module, tmp_path / "cache", ".", 120.0)
    assert run is not None
    assert run.broken
    verdict = decide(Run(outcomes=dict.fromkeys(ids("TestBelow", "TestAbove"), "passed")), run)
    assert isinstance(verdict, str) and verdict.startswith("does not build")


def test_forged_json_from_the_tests_output_is_not_a_result() -> None:
    """A line the test prints is an ``output`` event of its own test, never an outcome."""
    forged = json.dumps({"Action": "pass", "Package": MODULE, "Test": "TestAbove"})
    stream = "\n".join(
        json.dumps(event)
        for event in [
            {"Action": "run", "Package": MODULE, "Test": "TestAbove"},
            {"Action": "output", "Package": MODULE, "Test": "TestAbove", "Output": forged + "\n"},
            {"Action": "fail", "Package": MODULE, "Test": "TestAbove"},
            {"Action": "pass", "Package": MODULE, "Test": "TestAbove"},
        ]
    )
    assert parse_events(stream).outcomes == {f"{MODULE}/TestAbove": "failed"}


def test_tests_and_their_data_are_what_the_verifier_puts_back() -> None:
    assert is_test_file("cmp/compare_test.go")
    assert is_test_file("cmp/testdata/diffs")
    assert is_test_file("go.mod")
    assert not is_test_file("cmp/compare.go")
    assert not is_test_file("internal/testprotos/protos.go")


def test_a_generation_run_writes_validated_lines_and_resumes(module: Path, tmp_path: Path) -> None:
    repo = Repo("clamp", "golang-go", "example/clamp", "MIT", str(module), MODULE)
    manifest = tmp_path / "manifest"
    kept = generate(
        Go(), repo, quota=1, seed=3, work_root=tmp_path / "work", manifest_dir=manifest,
        deadline=float("inf"),
    )  # fmt: skip
    assert kept == 1
    (line,) = [json.loads(text) for text in (manifest / "clamp.jsonl").read_text().splitlines()]
    assert line["language"] == "go" and line["repo"] == "clamp" and line["files"] == ["clamp.go"]
    assert 1 <= len(line["FAIL_TO_PASS"]) <= 10 and line["PASS_TO_PASS"]
    assert set(line["FAIL_TO_PASS"] + line["PASS_TO_PASS"]) <= set(
        ids("TestBelow", "TestAbove", "TestInside", "TestDouble")
    )
    assert line["bug"].startswith("--- a/clamp.go\n+++ b/clamp.go\n")
    assert line["patch"].startswith("--- a/clamp.go\n+++ b/clamp.go\n")
    assert line["kind"] in line["mutation"] and line["kinds"] == [line["kind"]]
    assert line["FAIL_TO_PASS"][0].rsplit("/", 1)[1] in line["statement"]
    for text in line["bug"].splitlines()[3:]:
        if text[:1] in "+-":
            assert text[1:].strip() not in line["statement"]
    assert line["digest"].startswith("sha256:") and len(line["base_tree"]) == 40
    tried = (tmp_path / "work" / "clamp" / "tried.jsonl").read_text().splitlines()
    again = generate(
        Go(), repo, quota=1, seed=3, work_root=tmp_path / "work", manifest_dir=manifest,
        deadline=float("inf"),
    )  # fmt: skip
    assert again <= 1
    retried = (tmp_path / "work" / "clamp" / "tried.jsonl").read_text().splitlines()
    assert retried[: len(tried)] == tried
    assert {json.loads(t)["key"] for t in retried[len(tried) :]}.isdisjoint(
        json.loads(t)["key"] for t in tried
    )


def test_a_second_task_with_the_same_bug_is_flagged_a_duplicate_of_the_first() -> None:
    flags = {"flaky": False, "slow": False, "duplicate_of": None}
    lines = {
        name: with_digest({"instance_id": name, "bug": bug, "flags": dict(flags)})
        for name, bug in (("b", "--- a/x\n"), ("a", "--- a/x\n"), ("c", "--- a/y\n"))
    }
    sealed = lines["b"]["digest"]
    mark_duplicates(lines)
    assert [lines[name]["flags"]["duplicate_of"] for name in "abc"] == [None, "a", None]
    assert lines["b"]["digest"] != sealed == with_digest({**lines["b"], "flags": flags})["digest"]

"""Validation: a mutation is kept only when some tests of the file fail and the others pass.

The runs use Debian's /usr/bin/python3 and its pytest on a tiny package (no root filesystem)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from palaestra.envs.swe_local.mutations import Edit, Mutation, apply
from palaestra.envs.swe_local.validate import Runner, RunResult, Verdict, judge
from palaestra.envs.swe_local.worker import Confirmed, candidates, confirm, function_index

HOST_PYTHON = Path("/usr/bin/python3")

CORE = """\
def add(a, b):
    return a + b


def clamp(x, low, high):
    if x < low:
        return low
    if x > high:
        return high
    return x


def unused(x):
    return x * 3
"""
TESTS = """\
from tiny.core import add, clamp


def test_add():
    assert add(2, 3) == 5


def test_clamp_low():
    assert clamp(-5, 0, 10) == 0


def test_clamp_high():
    assert clamp(50, 0, 10) == 10


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5
"""


def _host_pytest() -> bool:
    if not HOST_PYTHON.is_file():
        return False
    probe = subprocess.run([str(HOST_PYTHON), "-c", "import pytest"], capture_output=True)
    return probe.returncode == 0


needs_host_pytest = pytest.mark.skipif(
    not _host_pytest(), reason="Debian's python3-pytest is not installed"
)


@pytest.fixture
def runner(tmp_path: Path) -> Runner:
    site = tmp_path / "site"
    (site / "tiny" / "tests").mkdir(parents=True)
    (site / "tiny" / "__init__.py").write_text("")
    (site / "tiny" / "tests" / "__init__.py").write_text("")
    (site / "tiny" / "core.py").write_text(CORE)
    (site / "tiny" / "tests" / "test_core.py").write_text(TESTS)
    made = Runner(tmp_path / "work", None, site=site)
    made.prepare("tiny")
    return made


def _replace(old: str, new: str) -> Mutation:
    lines = CORE.splitlines()
    for number, line in enumerate(lines, start=1):
        column = line.find(old)
        if column >= 0:
            return Mutation(
                "test", "f", number, (Edit((number, column), (number, column + len(old)), new),)
            )
    raise AssertionError(old)


def _judge_mutation(runner: Runner, baseline: RunResult, mutation: Mutation) -> Verdict | str:
    runner.write("tiny/core.py", apply(CORE, mutation))
    try:
        mutated = runner.run(["tiny/tests/test_core.py"], timeout=60)
    finally:
        runner.restore("tiny/core.py")
    return judge(baseline, mutated)


@needs_host_pytest
def test_baseline_records_outcomes_and_coverage(runner: Runner) -> None:
    baseline = runner.run(["tiny/tests/test_core.py"], cover="tiny", timeout=60)
    assert baseline is not None
    assert sorted(baseline.passed()) == [
        f"tiny/tests/test_core.py::{name}"
        for name in ("test_add", "test_clamp_high", "test_clamp_inside", "test_clamp_low")
    ]
    assert baseline.covered["tiny/tests/test_core.py::test_add"] == ["tiny/core.py:1"]
    index = function_index(CORE)
    chosen = {index[line][0] for _, line in candidates(baseline, broad=0.9)}
    assert chosen == {"add", "clamp"}  # never `unused`, which no test calls


@needs_host_pytest
def test_kept_mutation_names_the_failing_and_passing_tests(runner: Runner) -> None:
    baseline = runner.run(["tiny/tests/test_core.py"], timeout=60)
    assert baseline is not None
    verdict = _judge_mutation(runner, baseline, _replace("x > high", "x >= high + 1"))
    assert verdict == "no test fails"
    verdict = _judge_mutation(runner, baseline, _replace("x < low", "x > low"))
    assert isinstance(verdict, Verdict)
    assert verdict.fail_to_pass == [
        "tiny/tests/test_core.py::test_clamp_low",
        "tiny/tests/test_core.py::test_clamp_high",
        "tiny/tests/test_core.py::test_clamp_inside",
    ]
    assert verdict.pass_to_pass == ["tiny/tests/test_core.py::test_add"]
    assert (runner.work / "tiny" / "core.py").read_text() == CORE  # restored


@needs_host_pytest
def test_breaking_the_whole_file_is_rejected(runner: Runner) -> None:
    baseline = runner.run(["tiny/tests/test_core.py"], timeout=60)
    assert baseline is not None
    import_error = _replace("def add(a, b):", "def add(a, b):\n    import nowhere_module")
    # The module still imports (the import is inside add): only test_add fails.
    assert isinstance(_judge_mutation(runner, baseline, import_error), Verdict)
    broken = Mutation("test", "f", 1, (Edit((1, 0), (1, 0), "import nowhere_module\n"),))
    assert _judge_mutation(runner, baseline, broken) == "the test file no longer collects"


def test_judge_rules() -> None:
    ids = [f"t::{n}" for n in "abcd"]
    baseline = RunResult(outcomes={**dict.fromkeys(ids, "passed"), "t::skip": "skipped"})
    all_fail = RunResult(outcomes=dict.fromkeys(ids, "failed"))
    assert judge(baseline, all_fail) == "every test of the file fails"
    assert judge(baseline, None) == "timed out"
    assert judge(baseline, RunResult(outcomes=dict(baseline.outcomes))) == "no test fails"
    some = RunResult(outcomes={**dict.fromkeys(ids, "passed"), "t::a": "error", "t::b": "failed"})
    assert judge(baseline, some) == Verdict(["t::a", "t::b"], ["t::c", "t::d"])
    assert judge(baseline, some, max_fail=1) == "2 tests fail (more than 1)"


@needs_host_pytest
def test_confirm_runs_the_ids_together_as_the_task_does(runner: Runner) -> None:
    ids = [f"tiny/tests/test_core.py::{name}" for name in ("test_clamp_low", "test_add")]
    runner.write("tiny/core.py", apply(CORE, _replace("x < low", "x > low")))
    right = Verdict(fail_to_pass=ids[:1], pass_to_pass=ids[1:])
    confirmed = confirm(runner, "tiny/core.py", right, 60)
    assert isinstance(confirmed, Confirmed) and confirmed.verdict == right
    assert confirmed.broken.outcomes[ids[0]] == ["failed", "failed"]  # two broken runs
    assert not confirmed.broken.disagree(ids) and confirmed.seconds > 0
    assert (runner.work / "tiny" / "core.py").read_text() == CORE  # confirm restored it
    runner.write("tiny/core.py", apply(CORE, _replace("x < low", "x > low")))
    wrong = Verdict(fail_to_pass=ids[1:], pass_to_pass=ids[:1])
    assert confirm(runner, "tiny/core.py", wrong, 60) == (
        "the ids run together do not fail and pass as the file's run did"
    )


@needs_host_pytest
def test_the_probe_records_the_lines_passing_tests_ran_and_no_other(runner: Runner) -> None:
    baseline = runner.run(["tiny/tests/test_core.py"], cover="tiny", timeout=60)
    assert baseline is not None
    # add's body and every line of clamp ran; `unused` (lines 13-14) never did.
    assert baseline.lines == {"tiny/core.py": [2, 6, 7, 8, 9, 10]}
    plain = runner.run(["tiny/tests/test_core.py"], timeout=60)
    assert plain is not None and plain.lines == {}  # only the probe's run traces lines

"""A unit of generation end to end on a tiny package with Debian's python3 and pytest: the
lines it writes are valid manifest lines with measured flags, and a second run skips the
mutations the manifest already holds."""

from __future__ import annotations

from pathlib import Path

from palaestra.envs.swe_local import generate, manifest
from palaestra.envs.swe_local.generate import merge
from palaestra.envs.swe_local.mutations import mutations
from palaestra.envs.swe_local.validate import Runner
from palaestra.envs.swe_local.variants import make_variants
from palaestra.envs.swe_local.worker import (
    GOLD_RUNS,
    Bug,
    Options,
    Outcome,
    Unit,
    _try,
    function_index,
    gold_state,
    reached,
    settle,
    work_unit,
)
from tests.envs.swe_local.test_validate import CORE, needs_host_pytest, runner  # noqa: F401

UNIT = Unit("tiny", "tiny", "python3-tiny", "1.0-1", "tiny/tests/test_core.py", 0)


@needs_host_pytest
def test_a_unit_writes_valid_lines_and_a_second_run_skips_them(
    runner: Runner,  # noqa: F811
    tmp_path: Path,
) -> None:
    options = Options(per_file=5, tries_per_file=10)
    outcome = work_unit(runner, UNIT, options, set())
    assert outcome.lines and not outcome.skipped and outcome.tried >= len(outcome.lines)
    for line in outcome.lines:
        assert manifest.problem(line) is None, line
        assert line["instance_id"].startswith("tiny__core__")
        assert line["files"] == ["tiny/core.py"] and line["functions"][0] in ("add", "clamp")
        assert line["test_seconds"] > 0 and line["difficulty"]["files"] == 1
        assert line["flags"]["off_target"] is False  # the failing tests call the function
        assert line["flags"]["flaky"] is False
        assert "tiny.core" in line["statement"] and line["patch"] not in line["statement"]
    assert (runner.work / "tiny" / "core.py").read_text() == (
        runner.site / "tiny" / "core.py"
    ).read_text()  # every mutation undone
    assert list((tmp_path / "gold").rglob("*.json"))  # the gold state, kept for later runs
    merge(tmp_path / "manifest", outcome.lines)
    written = manifest.read_directory(tmp_path / "manifest")
    assert [line["instance_id"] for line in written] == sorted(
        line["instance_id"] for line in outcome.lines
    )
    known = {str(line["mutation"]) for line in written}
    again = work_unit(runner, UNIT, options, set(known))
    assert not {str(line["mutation"]) for line in again.lines} & known


@needs_host_pytest
def test_two_bugs_in_two_functions_make_one_combined_task(runner: Runner) -> None:  # noqa: F811
    index = {name: (first, node) for first, (name, node) in function_index(CORE).items()}
    parts = []
    for name, kind in (("add", "arith"), ("clamp", "drop_if")):
        first, node = index[name]
        mutation = next(m for m in mutations(CORE, name, node) if m.kind == kind)
        parts.append((mutation, first))
    gold = gold_state(runner, UNIT, runner.work.parent, 60)
    assert gold is not None
    outcome = Outcome(UNIT)
    bug = Bug("tiny/core.py", tuple(parts))
    line = _try(runner, UNIT, bug, CORE, gold, Options(), 60, outcome)
    assert line is not None, outcome.rejected
    assert line["kind"] == "combined" and line["kinds"] == ["arith", "drop_if"]
    assert line["functions"] == ["add", "clamp"] and line["difficulty"]["lines"] == 3
    assert line["mutation"] == bug.key and "+" in bug.key
    assert "tiny/tests/test_core.py::test_add" in line["FAIL_TO_PASS"]
    assert len(line["FAIL_TO_PASS"]) >= 2  # each bug fails its own tests


@needs_host_pytest
def test_variants_are_other_bugs_of_the_same_function_or_kind(runner: Runner) -> None:  # noqa: F811
    first, node = next((f, n) for f, (name, n) in function_index(CORE).items() if name == "clamp")
    mutation = next(m for m in mutations(CORE, "clamp", node) if m.kind == "drop_if")
    gold = gold_state(runner, UNIT, runner.work.parent, 60)
    assert gold is not None
    bug = Bug("tiny/core.py", ((mutation, first),))
    task = _try(runner, UNIT, bug, CORE, gold, Options(), 60, Outcome(UNIT))
    assert task is not None
    made = make_variants(runner, task, 2, 0, Options(tries_per_file=20))
    assert made.lines, made.rejected
    for variant in made.lines:
        assert variant["variant_of"] == task["instance_id"]
        assert variant["mutation"] != task["mutation"] and manifest.problem(variant) is None
        same_function = variant["functions"] == task["functions"]
        assert same_function or variant["kind"] == task["kind"]


def test_test_files_are_found_wherever_a_package_keeps_them(tmp_path: Path) -> None:
    """pyflakes keeps its suite in test/, pint in testsuite/, ecdsa beside its code: none of
    their files was a unit of work before (no tests/ directory), so they gave no task."""
    for path in (
        "pkg/tests/test_a.py",
        "pkg/test/test_b.py",
        "pkg/testsuite/test_c.py",
        "pkg/test_d.py",
        "pkg/__pycache__/test_e.py",
        "pkg/helpers.py",
    ):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    assert generate.test_files(tmp_path, "pkg") == [
        "pkg/test/test_b.py",
        "pkg/test_d.py",
        "pkg/tests/test_a.py",
        "pkg/testsuite/test_c.py",
    ]


def test_a_mutation_on_a_line_no_passing_test_ran_is_not_drawn() -> None:
    source = "def f(x):\n    if x > 5:\n        return x - 1\n    return x + 1\n"
    node = function_index(source)[1][1]
    drawn = {m.line: m for m in mutations(source, "f", node)}
    assert reached(drawn[4], [2, 4]) and reached(drawn[2], [2, 4])
    assert not reached(drawn[3], [2, 4])  # `x - 1`: the branch the tests never take
    assert reached(drawn[3], None)  # a gold state recorded before lines were: no filter
    default = "def g(x, flag=True):\n    return x\n"
    changed = next(m for m in mutations(default, "g", function_index(default)[1][1]))
    assert changed.kind == "changed_default" and reached(changed, [2])


@needs_host_pytest
def test_the_gold_state_is_run_again_only_when_a_task_needs_its_flakiness(
    runner: Runner,  # noqa: F811
) -> None:
    work = runner.work.parent
    gold = gold_state(runner, UNIT, work, 60, settled=False)
    assert gold is not None
    assert {len(runs) for runs in gold.runs.outcomes.values()} == {1}  # the probe's run only
    cached = gold_state(runner, UNIT, work, 60, settled=False)
    assert cached is not None and {len(r) for r in cached.runs.outcomes.values()} == {1}
    settled = settle(runner, UNIT, work, cached)
    assert {len(runs) for runs in settled.runs.outcomes.values()} == {GOLD_RUNS}
    again = gold_state(runner, UNIT, work, 60, settled=False)  # kept with its runs
    assert again is not None and again.runs.outcomes == settled.runs.outcomes

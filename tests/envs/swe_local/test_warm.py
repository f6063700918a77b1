"""The warm pytest judges a mutation as a fresh process does, one mutation never sees another,
and what it cannot swap runs cold; the tests it runs are those that call a changed function.

Real runs of Debian's /usr/bin/python3 and its pytest on a tiny package (no root filesystem)."""

from __future__ import annotations

from pathlib import Path

from palaestra.envs.swe_local.mutations import Edit, Mutation, apply, mutations
from palaestra.envs.swe_local.validate import Runner, RunResult, judge
from palaestra.envs.swe_local.warm import Warm, selected, swaps
from palaestra.envs.swe_local.worker import function_index
from tests.envs.swe_local.test_validate import CORE, needs_host_pytest, runner  # noqa: F401

FILE = "tiny/tests/test_core.py"


def _mutation(kind: str, function: str) -> Mutation:
    index = {name: node for _, (name, node) in function_index(CORE).items()}
    return next(m for m in mutations(CORE, function, index[function]) if m.kind == kind)


def test_the_tests_run_warm_are_those_that_call_a_changed_function() -> None:
    covered = {
        "t.py::test_a": ["pkg/m.py:1"],
        "t.py::test_b": ["pkg/m.py:9"],
        "t.py::K::test_c": [],  # its class's first test ran the setup that called pkg/m.py:1
        "t.py::K::test_d": ["pkg/m.py:1"],
        "t.py::test_e": [],
    }
    passed = list(covered)
    assert selected(covered, passed, {"pkg/m.py:1"}) == [
        "t.py::test_a",
        "t.py::K::test_c",
        "t.py::K::test_d",
    ]
    assert selected(covered, passed, {"pkg/m.py:9", "pkg/m.py:1"}) == passed[:4]


def test_a_changed_default_and_a_removed_function_run_cold() -> None:
    arith = _mutation("arith", "add")
    assert swaps(CORE, apply(CORE, arith), [arith]) == [["add", 1, 1, True]]
    source = "def f(x, flag=True):\n    return x if flag else -x\n"
    node = function_index(source)[1][1]
    default = next(m for m in mutations(source, "f", node) if m.kind == "changed_default")
    assert swaps(source, apply(source, default), [default]) is None
    nested = "def f(x):\n    def g(y):\n        return y + 1\n    return g(x)\n"
    inner = next(m for m in mutations(nested, "f.g", function_index(nested)[2][1]))
    assert swaps(nested, apply(nested, inner), [inner]) == [
        ["f", 1, 1, True],
        ["f.<locals>.g", 2, 2, False],
    ]
    dropped = Mutation("drop_if", "f", 2, (Edit((2, 0), (4, 0), ""),))
    assert swaps(nested, apply(nested, dropped), [dropped]) is None  # g is gone


@needs_host_pytest
def test_a_warm_run_judges_as_a_fresh_run_and_forgets_each_mutation(
    runner: Runner,  # noqa: F811
) -> None:
    gold = runner.run([FILE], cover="tiny", timeout=60)
    assert gold is not None
    warm = Warm(runner, FILE)
    try:
        assert warm.started
        for kind, function in (("arith", "add"), ("compare", "clamp"), ("drop_if", "clamp")):
            mutation = _mutation(kind, function)
            changed = apply(CORE, mutation)
            runner.write("tiny/core.py", changed)
            try:
                cold = runner.run([FILE], timeout=60)
                plan = swaps(CORE, changed, [mutation])
                assert plan is not None
                hot = warm.run("tiny/core.py", plan, gold.passed(), 60)
            finally:
                runner.restore("tiny/core.py")
            assert isinstance(hot, RunResult) and cold is not None
            assert hot.outcomes == cold.outcomes, kind
            assert judge(gold, hot) == judge(gold, cold)
        # The process the children fork from never took a mutation: the original passes.
        untouched = warm.run("tiny/core.py", [["add", 1, 1, True]], gold.passed(), 60)
        assert isinstance(untouched, RunResult)
        assert set(untouched.outcomes.values()) == {"passed"}
        missing = warm.run("tiny/core.py", [["nowhere", 1, 1, True]], gold.passed(), 60)
        assert missing == "nowhere not found"
    finally:
        warm.close()
    assert warm.process is None and not warm.out.exists()


@needs_host_pytest
def test_a_hanging_mutation_times_out_and_the_warm_pytest_serves_on(
    runner: Runner,  # noqa: F811
) -> None:
    gold = runner.run([FILE], timeout=60)
    assert gold is not None
    warm = Warm(runner, FILE)
    hang = CORE.replace("    return a + b", "    while True:\n        pass")
    try:
        runner.write("tiny/core.py", hang)
        try:
            assert warm.run("tiny/core.py", [["add", 1, 1, True]], gold.passed(), 3) is None
        finally:
            runner.restore("tiny/core.py")
        again = warm.run("tiny/core.py", [["add", 1, 1, True]], gold.passed(), 60)
        assert isinstance(again, RunResult) and len(again.outcomes) == 4
    finally:
        warm.close()


@needs_host_pytest
def test_a_file_that_does_not_collect_gives_no_warm_pytest(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "tiny" / "tests").mkdir(parents=True)
    (site / "tiny" / "__init__.py").write_text("")
    (site / "tiny" / "tests" / "__init__.py").write_text("")
    (site / "tiny" / "tests" / "test_core.py").write_text("import nowhere_module\n")
    made = Runner(tmp_path / "work", None, site=site)
    made.prepare("tiny")
    warm = Warm(made, FILE)
    assert not warm.started and warm.process is None
    assert warm.run("tiny/core.py", [], [FILE], 10) == "no warm pytest"

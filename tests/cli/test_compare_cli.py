"""``palaestra compare`` and collect's figures as a user sees them: real runs, real processes.

Two runs of the mcqa environment against scripted models over real HTTP: A gives every task
its golden answer (reward 1); B answers the Red Planet (task 0) wrong and gets a 400 for
17 x 6 (task 1: a model_error failure).
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from palaestra.envs import mcqa
from palaestra.types import JsonDict
from tests.cli.test_collect_cli import run_cli
from tests.evaluate.synthetic import write_run
from tests.support.scripted_model import ScriptedFault, ScriptedModelServer, text_response

TASKS = [
    orjson.loads(line)
    for line in (Path(mcqa.__file__).parent / "tasks.jsonl").read_bytes().splitlines()
]


def answer(params: JsonDict, *, worse: bool) -> JsonDict | ScriptedFault:
    asked = orjson.dumps(params["input"]).decode()
    for number, task in enumerate(TASKS):
        if task["question"] in asked:
            if worse and number == 1:
                return ScriptedFault(status=400, body={"error": {"message": "too long"}})
            wrong = worse and number == 0
            return text_response(task["wrong_response" if wrong else "golden_response"])
    raise AssertionError(f"an unknown task: {asked}")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str, str]:
    """(run A, run B, B's summary, B's summary read with --failures-as-zero)."""
    where = tmp_path_factory.mktemp("runs")
    with ScriptedModelServer(lambda params: answer(params, worse=False)) as server:
        done = run_cli(
            "collect", "--env", "mcqa", "--model", server.url, "--output", "a.jsonl", cwd=where
        )
        assert done.returncode == 0, done.stderr
    summaries = []
    with ScriptedModelServer(lambda params: answer(params, worse=True)) as server:
        for output, extra in (("b.jsonl", []), ("b0.jsonl", ["--failures-as-zero"])):
            done = run_cli(
                "collect",
                "--env",
                "mcqa",
                "--model",
                server.url,
                "--output",
                output,
                *extra,
                cwd=where,
            )
            assert done.returncode == 0, done.stderr
            summaries.append(done.stdout)
    return where / "a.jsonl", where / "b.jsonl", summaries[0], summaries[1]


def test_collect_shows_figures_with_intervals_and_the_reading_of_failures(
    runs: tuple[Path, Path, str, str],
) -> None:
    _, _, left_out, as_zero = runs
    assert "0.7500 [" in left_out and "n=4 tasks/4 rollouts, 1 failed (excluded)" in left_out
    assert "0.6000 [" in as_zero and "n=5 tasks/5 rollouts, 1 failed (as 0)" in as_zero
    assert "95% interval" in left_out and "--failures-as-zero" in left_out


def test_compare_pairs_the_runs_and_lists_the_task_that_flipped(
    runs: tuple[Path, Path, str, str], tmp_path: Path
) -> None:
    a, b, _, _ = runs
    done = run_cli("compare", str(a), str(b), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "5 tasks paired" in done.stdout
    assert "pass -> fail: 1 tasks (task (pass rate A->B)): 0 (1->0)" in done.stdout
    assert "failures: A 0, B 1" in done.stdout


def test_fail_if_worse_exits_5_unless_a_drop_beyond_the_margin_is_ruled_out(
    runs: tuple[Path, Path, str, str], tmp_path: Path
) -> None:
    a, b, _, _ = runs
    worse = run_cli("compare", str(a), str(b), "--fail-if-worse", "0.05", cwd=tmp_path)
    assert worse.returncode == 5, worse.stdout + worse.stderr
    assert "gate failed: mean reward" in worse.stdout
    # five tasks cannot rule out a 5-point drop, even of a run against itself; a 50-point one
    same = run_cli("compare", str(a), str(a), "--fail-if-worse", "0.05", cwd=tmp_path)
    assert same.returncode == 5, same.stdout + same.stderr
    same = run_cli("compare", str(a), str(a), "--fail-if-worse", "0.5", cwd=tmp_path)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "gate passed: mean reward: the 95% interval of B - A starts at -0.4" in same.stdout


def test_json_output_carries_the_difference_interval_test_and_gate(
    runs: tuple[Path, Path, str, str], tmp_path: Path
) -> None:
    a, b, _, _ = runs
    done = run_cli("compare", str(a), str(b), "--json", "--fail-if-worse", "0.5", cwd=tmp_path)
    report = orjson.loads(done.stdout)
    mean = report["differences"][0]
    assert mean["name"] == "mean reward" and mean["difference"] == pytest.approx(-0.25)
    assert mean["tasks"] == 4 and mean["interval"]["method"] == "newcombe"  # 0/1 per task
    assert mean["bootstrap"]["method"] == "bootstrap"
    assert report["to_fail"] == [{"task": 0, "a": 1.0, "b": 0.0}]
    assert report["b"]["failure_kinds"] == {"model_error": 1}
    assert report["gate"]["passed"] is (done.returncode == 0)


def test_a_malformed_run_is_one_line_naming_the_file_and_line(
    runs: tuple[Path, Path, str, str], tmp_path: Path
) -> None:
    a, _, _, _ = runs
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(a.read_bytes() + b"{oops\n")
    done = run_cli("compare", str(a), str(broken), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().startswith(f"error: {broken}:6: not JSON")
    assert "Traceback" not in done.stderr


def test_gating_on_a_figure_not_compared_is_one_line_and_exit_1(
    runs: tuple[Path, Path, str, str], tmp_path: Path
) -> None:
    a, b, _, _ = runs
    done = run_cli(
        "compare", str(a), str(b), "--fail-if-worse", "0.1", "--metric", "pass@9", cwd=tmp_path
    )
    assert done.returncode == 1
    assert done.stderr.strip().startswith("error: cannot gate on 'pass@9'")
    gated = run_cli(
        "compare", str(a), str(b), "--fail-if-worse", "0.9", "--metric", "pass@1", cwd=tmp_path
    )
    assert gated.returncode == 0 and "gate passed: pass@1" in gated.stdout


def test_the_gate_fails_a_candidate_with_more_failed_rollouts_and_says_why(
    tmp_path: Path,
) -> None:
    a = write_run(tmp_path / "a.jsonl", {t: [0.5] * 10 for t in range(100)})
    b = write_run(tmp_path / "b.jsonl", {t: [0.5] * 5 + ["model_error"] * 5 for t in range(100)})
    done = run_cli("compare", str(a), str(b), "--fail-if-worse", "0.02", cwd=tmp_path)
    assert done.returncode == 5, done.stdout + done.stderr
    assert (
        "gate failed: failures: candidate failed 500 of 1000 rollouts (50.0%), baseline 0 of "
        "1000 (0.0%): beyond the margin 0.02 (--allow-more-failures passes it)\n"
    ) in done.stdout
    assert "gate passed: mean reward" in done.stdout and "gate passed: tasks" in done.stdout
    allowed = run_cli(
        "compare", str(a), str(b), "--fail-if-worse", "0.02", "--allow-more-failures", cwd=tmp_path
    )
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "gate passed: failures: candidate failed 500 of 1000" in allowed.stdout


def test_the_gate_fails_a_candidate_that_covers_half_the_tasks_and_says_why(
    tmp_path: Path,
) -> None:
    a = write_run(tmp_path / "a.jsonl", {t: [0.5] for t in range(100)})
    b = write_run(tmp_path / "b.jsonl", {t: [0.5] for t in range(50)})
    done = run_cli("compare", str(a), str(b), "--fail-if-worse", "0.02", "--json", cwd=tmp_path)
    assert done.returncode == 5, done.stdout + done.stderr
    checks = orjson.loads(done.stdout)["gate"]["checks"]
    assert [(check["name"], check["passed"]) for check in checks] == [
        ("mean reward", True),
        ("failures", True),
        ("tasks", False),
    ]
    shown = run_cli("compare", str(a), str(b), "--fail-if-worse", "0.02", cwd=tmp_path)
    assert (
        "gate failed: tasks: candidate has 50 of the baseline's 100 tasks (50.0%), 50 missing: "
        "beyond the margin 0.02 (--allow-fewer-tasks passes it)\n"
    ) in shown.stdout
    allowed = run_cli(
        "compare", str(a), str(b), "--fail-if-worse", "0.02", "--allow-fewer-tasks", cwd=tmp_path
    )
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr


def test_a_torn_last_line_is_skipped_with_a_warning_naming_the_file_and_line(
    tmp_path: Path,
) -> None:
    a = write_run(tmp_path / "a.jsonl", {t: [1.0, "timeout"] for t in range(3)})
    b = write_run(tmp_path / "b.jsonl", {t: [1.0, 0.0] for t in range(3)})
    b.write_bytes(b.read_bytes() + b'{"_ng_task_index": 3, "rew')  # a run still writing
    failures = tmp_path / "a_failures.jsonl"
    failures.write_bytes(failures.read_bytes() + b'{"_ng_task_index": 1, "failure": {')
    done = run_cli("compare", str(a), str(b), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"warning: {failures}:4: the last line is incomplete (a run still writing, or killed "
        "mid-write) and was skipped",
        f"warning: {b}:7: the last line is incomplete (a run still writing, or killed "
        "mid-write) and was skipped",
    ]
    assert "3 tasks paired" in done.stdout and "failures: A 3, B 0" in done.stdout
    middle = tmp_path / "middle.jsonl"
    middle.write_bytes(b"{oops\n" + a.read_bytes())
    broken = run_cli("compare", str(a), str(middle), cwd=tmp_path)
    assert broken.returncode == 1 and broken.stderr.startswith(f"error: {middle}:1: not JSON")

"""Reading a run back: rows and failures by task, each rollout either scored or failed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from palaestra.errors import ConfigError, InputError
from palaestra.evaluate import combine_runs, load_run, run_figures
from tests.evaluate.synthetic import write_run


def test_rollouts_and_failures_are_grouped_by_task_in_repeat_order(tmp_path: Path) -> None:
    out = write_run(tmp_path / "r.jsonl", {2: [1.0, "timeout", 0.5], 0: [0.0, 1.0]})
    run = load_run(out)
    assert list(run.tasks) == [0, 2]
    assert run.tasks[2].rewards == [1.0, 0.5]
    assert [(f.index, f.kind, f.masked) for f in run.tasks[2].failures] == [(1, "timeout", True)]
    assert (run.scored, run.failed, run.masked) == (4, 1, 1)
    assert run.tasks[0].identity != run.tasks[2].identity
    assert run.agents() == ["agent"]


def test_a_failure_whose_rollout_was_scored_later_is_not_counted(tmp_path: Path) -> None:
    out = write_run(tmp_path / "r.jsonl", {0: [1.0, "timeout"]})
    failures = tmp_path / "r_failures.jsonl"
    first = orjson.loads(failures.read_bytes())
    retried = {**first, "_ng_rollout_index": 0}  # rollout 0 failed once, then was scored
    failures.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in (retried, first, first)))
    run = load_run(out)
    assert [f.index for f in run.tasks[0].failures] == [1]  # recorded twice, counted once
    assert run.superseded == 2


def test_a_null_reward_is_a_failure_of_its_own_kind_not_a_zero(tmp_path: Path) -> None:
    run = load_run(write_run(tmp_path / "r.jsonl", {0: [None, 1.0]}))
    assert run.tasks[0].rewards == [1.0]
    assert [f.kind for f in run.tasks[0].failures] == ["nan_reward"]


def test_verifier_metrics_and_components_are_read_but_not_the_task_fields(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    row = {
        "_ng_task_index": 0,
        "_ng_rollout_index": 0,
        "id": 17,
        "reward": 1.0,
        "reward_components": {"format": 0.5},
        "exact": True,
        "_palaestra": {"verifier_fields": ["reward", "reward_components", "exact"]},
        "response": {"usage": {"input_tokens": 10, "output_tokens": 3, "total_tokens": 13}},
    }
    out.write_bytes(orjson.dumps(row) + b"\n")
    (rollout,) = load_run(out).rollouts()
    assert rollout.metrics == {"reward_components/format": 0.5, "exact": 1.0}
    assert rollout.usage == {"input_tokens": 10, "output_tokens": 3, "total_tokens": 13}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"{not json\n", r"r\.jsonl:2: not JSON"),
        (b"[1, 2]\n", r"r\.jsonl:2: not a JSON object"),
        (b'{"reward": 1.0}\n', r"r\.jsonl:2: field '_ng_task_index': missing"),
        (b'{"_ng_task_index": 1, "reward": "high"}\n', r"r\.jsonl:2: field 'reward': not a num"),
    ],
)
def test_a_bad_line_is_one_error_naming_file_line_and_field(
    tmp_path: Path, line: bytes, message: str
) -> None:
    out = write_run(tmp_path / "r.jsonl", {0: [1.0]})
    out.write_bytes(out.read_bytes() + line)
    with pytest.raises(InputError, match=message):
        load_run(out)


def test_a_missing_run_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no run at"):
        load_run(tmp_path / "nothing.jsonl")


def test_importing_palaestra_evaluate_loads_neither_numpy_nor_scipy() -> None:
    code = (
        "import sys, palaestra, palaestra.evaluate, palaestra.cli\n"
        "print(sorted(m for m in ('numpy', 'scipy') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_details_false_leaves_out_usage_and_timings_but_not_the_figures_inputs(
    tmp_path: Path,
) -> None:
    out = tmp_path / "r.jsonl"
    row = {
        "_ng_task_index": 0,
        "_ng_rollout_index": 0,
        "reward": 0.5,
        "extracted_answer": " 42 ",
        "_palaestra": {"timings": {"model": 1.5}, "verifier_fields": ["reward"]},
        "response": {"usage": {"input_tokens": 10}},
    }
    out.write_bytes(orjson.dumps(row) + b"\n")
    (full,) = load_run(out).rollouts()
    (light,) = load_run(out, details=False).rollouts()
    assert (full.usage, full.timings) == ({"input_tokens": 10}, {"model": 1.5})
    assert (light.usage, light.timings) == ({}, {})
    assert (light.reward, light.answer) == (full.reward, full.answer) == (0.5, "42")


def test_only_keeps_the_rollouts_and_failures_of_one_agent(tmp_path: Path) -> None:
    out = write_run(tmp_path / "r.jsonl", {0: [1.0, "timeout"], 1: [0.0]})
    other = {
        "_ng_task_index": 5,
        "_ng_rollout_index": 0,
        "reward": 1.0,
        "agent_ref": {"type": "responses_api_agents", "name": "other"},
    }
    out.write_bytes(out.read_bytes() + orjson.dumps(other) + b"\n")
    run = load_run(out)
    assert run.agents() == ["agent", "other"]
    mine = run.only("agent")
    assert list(mine.tasks) == [0, 1] and (mine.scored, mine.failed) == (2, 1)
    assert list(run.only("other").tasks) == [5]


def test_combined_runs_number_their_tasks_anew_and_keep_every_rollout(tmp_path: Path) -> None:
    one = load_run(write_run(tmp_path / "a.jsonl", {0: [1.0, 1.0], 1: [0.0, "timeout"]}))
    two = load_run(write_run(tmp_path / "b.jsonl", {0: [0.5, 0.5]}, text="other"))
    both = combine_runs([one, two])
    assert list(both.tasks) == [0, 1, 2]
    assert both.tasks[2].rewards == [0.5, 0.5] and both.tasks[2].identity == two.tasks[0].identity
    assert (both.scored, both.failed) == (5, 1)
    assert run_figures(both).figure("mean reward").value == pytest.approx((1.0 + 0.0 + 0.5) / 3)


def test_a_torn_last_line_of_either_file_is_skipped_and_named(tmp_path: Path) -> None:
    out = write_run(tmp_path / "r.jsonl", {0: [1.0, "timeout"], 1: [0.0, 1.0]})
    failures = tmp_path / "r_failures.jsonl"
    out.write_bytes(out.read_bytes() + b'{"_ng_task_index": 2, "rew')  # a run still writing
    failures.write_bytes(failures.read_bytes() + b'{"_ng_task_index": 1, "failure": {"ki')
    run = load_run(out)
    assert (run.scored, run.failed, sorted(run.tasks)) == (3, 1, [0, 1])
    assert [(line.path, line.line) for line in run.torn] == [(str(out), 4), (str(failures), 2)]
    assert run.warnings == [
        f"{out}:4: the last line is incomplete (a run still writing, or killed mid-write) "
        "and was skipped",
        f"{failures}:2: the last line is incomplete (a run still writing, or killed "
        "mid-write) and was skipped",
    ]
    assert combine_runs([run, run]).torn == run.torn * 2


def test_a_bad_line_before_the_last_is_still_an_error(tmp_path: Path) -> None:
    out = write_run(tmp_path / "r.jsonl", {0: [1.0]})
    out.write_bytes(out.read_bytes() + b"{oops\n" + out.read_bytes().rstrip(b"\n"))
    with pytest.raises(InputError, match=r"r\.jsonl:2: not JSON"):
        load_run(out)

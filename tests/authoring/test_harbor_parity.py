"""The parity table and file: a task whose two runners disagree, or where one side failed,
is never counted as the same."""

from __future__ import annotations

from palaestra.authoring.harbor_parity import Score, TaskParity, experiment, table


def parity(name: str, harbor_oracle: Score, ours_oracle: Score) -> TaskParity:
    return TaskParity(
        name,
        {"oracle": harbor_oracle, "nop": Score(0.0)},
        {"oracle": ours_oracle, "null": Score(0.0)},
    )


def test_a_task_whose_rewards_differ_or_fail_is_marked_not_the_same() -> None:
    results = [
        parity("agree", Score(1.0), Score(1.0)),
        parity("differ", Score(1.0), Score(0.0)),
        parity("failed", Score(None, "harbor wrote no result"), Score(None, "sandbox_error: x")),
    ]
    lines = table(results).splitlines()
    assert "| agree | 1 | 1 | 0 | 0 | yes |" in lines
    assert "| differ | 1 | 0 | 0 | 0 | **no** |" in lines
    assert (
        "| failed | error (harbor wrote no result) | error (sandbox_error: x) | 0 | 0 | **no** |"
        in lines
    )
    oracle = experiment("set", results, 10, "notes")[0]["metrics"][0]
    assert oracle["same"] == 1
    assert oracle["original_runs"] == [1.0, 1.0, None]
    assert oracle["original"] == "1.000 +/- 0.000"

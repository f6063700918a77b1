"""Two runs paired by (task, rollout) for the side-by-side view."""

from __future__ import annotations

from pathlib import Path

import pytest

from palaestra.types import FailureKind
from palaestra.viewer.index import RunIndex
from palaestra.viewer.pairs import Pairing
from tests.viewer.rows import failed, scored, write_run


def test_pairs_where_the_runs_differ_leave_out_equal_rewards_and_equal_failures(
    tmp_path: Path,
) -> None:
    timeout, tool = FailureKind.TIMEOUT, FailureKind.TOOL_ERROR
    a = RunIndex(
        write_run(
            tmp_path / "a.jsonl",
            [scored(0, "Oslo", 1.0), scored(3, "Rome", 0.0), scored(4, "Lima", 1.0)],
            [failed(1, timeout, "slow"), failed(2, timeout, "slow")],
        )
    )
    b = RunIndex(
        write_run(
            tmp_path / "b.jsonl",
            [scored(0, "Oslo", 1.0), scored(3, "Rome", 0.5, rollout=0), scored(5, "Quito", 1.0)],
            [failed(1, timeout, "slow"), failed(2, tool, "boom"), failed(4, tool, "boom")],
        )
    )
    pairing = Pairing(a, b)
    matched, lines = pairing.select(only="different")
    assert [line["task"] for line in lines] == [2, 3, 4, 5]  # 0: same reward, 1: same failure
    assert matched == 4
    by_delta = [line["task"] for line in pairing.select(only="different", sort="delta")[1]]
    assert by_delta == [3, 2, 4, 5]  # 3 is the only pair both scored: +0.5
    assert pairing.stats() == {
        "both": 5, "only_a": 0, "only_b": 1, "a_better": 0, "b_better": 1, "ties": 1,
        "mean_delta": pytest.approx(0.25),
    }  # fmt: skip
    (line,) = pairing.select(task=4)[1]
    assert (line["a"]["reward"], line["b"]["kind"], line["delta"]) == (1.0, "tool_error", None)
    assert pairing.select(only="both")[0] == 5

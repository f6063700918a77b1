"""The viewer's index of a run: one pass, rows read back by offset, filters, sorts, search."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from palaestra.errors import InputError
from palaestra.types import FailureKind, JsonDict
from palaestra.viewer.index import Query, RunIndex
from tests.viewer.rows import big_run, failed, scored, small_run, write_run


@pytest.fixture
def index(tmp_path: Path) -> RunIndex:
    return RunIndex(small_run(tmp_path / "run.jsonl"))


def test_the_index_holds_every_scored_rollout_and_every_failure_with_its_kind(
    index: RunIndex,
) -> None:
    summary = index.summary()
    assert (summary["rows"], summary["scored"], summary["failed"]) == (15, 12, 3)
    assert summary["failed_by_kind"] == {"tool_error": 2, "timeout": 1}
    # rewards: t % 3 == 0 for tasks 0..9 (4 ones), 1.0, 0.5
    assert summary["mean_reward"] == pytest.approx((4 + 1 + 0.5) / 12)
    assert summary["tasks"] == 15


def test_a_row_is_read_back_from_its_byte_offset_and_says_where_it_is(index: RunIndex) -> None:
    assert index.read(3)["_ng_task_index"] == 3
    failure = index.read(13)
    assert failure["failure"]["kind"] == "timeout"
    assert index.where(13) == {
        "source": "failures",
        "file": str(index.files[1]),
        "line": 2,
    }
    with pytest.raises(IndexError):
        index.read(15)


def test_filters_by_reward_range_status_task_and_text_combine(index: RunIndex) -> None:
    assert index.select(Query(reward_min=1.0))[0] == 5
    assert index.select(Query(reward_min=0.2, reward_max=0.8))[1] == [11]
    assert index.select(Query(kind="failed"))[1] == [12, 13, 14]
    assert index.select(Query(kind="tool_error"))[1] == [12, 14]
    assert index.select(Query(kind="no_such_kind"))[0] == 0
    assert index.select(Query(task=7))[1] == [7]
    assert index.select(Query(text="paris"))[1] == [1, 9]
    assert index.select(Query(text="PARIS", reward_min=1.0))[1] == [9]
    # a reward bound keeps scored rows only: failures have no reward
    assert index.select(Query(reward_max=1.0))[0] == 12


def test_sorting_by_reward_time_or_tokens_puts_rows_without_the_value_last(
    index: RunIndex,
) -> None:
    _, by_reward = index.select(Query(sort="reward", descending=True, limit=100))
    assert by_reward[:5] == [0, 3, 6, 9, 10]  # the ones, in file order
    assert by_reward[5] == 11  # 0.5
    assert by_reward[-3:] == [12, 13, 14]  # failures have no reward: last either way
    _, ascending = index.select(Query(sort="reward", limit=100))
    assert ascending[-3:] == [12, 13, 14]
    _, by_time = index.select(Query(sort="time", descending=True, limit=1))
    assert by_time == [9]  # 1.4 s
    _, by_tokens = index.select(Query(sort="tokens", descending=True, limit=1))
    assert by_tokens == [11]  # 220 tokens


def test_text_is_matched_as_json_writes_it_so_a_quote_in_the_query_finds_its_row(
    tmp_path: Path,
) -> None:
    row = scored(0, 'the "Big" Apple', 1.0)
    index = RunIndex(write_run(tmp_path / "run.jsonl", [scored(1, "Oslo", 1.0), row]))
    assert index.select(Query(text='the "big" apple'))[1] == [1]


def test_the_page_is_a_slice_of_the_matching_rows(tmp_path: Path) -> None:
    index = RunIndex(big_run(tmp_path / "big.jsonl", 1000))
    matched, page = index.select(Query(kind="scored", offset=100, limit=50))
    assert matched == 980
    assert len(page) == 50
    assert page[0] == 100


def test_a_torn_last_line_is_left_out_and_reported_not_an_error(tmp_path: Path) -> None:
    path = write_run(tmp_path / "run.jsonl", [scored(0, "Oslo", 1.0), scored(1, "Lima", 0.0)])
    path.write_bytes(path.read_bytes() + orjson.dumps(scored(2, "Rome", 1.0))[:40])
    index = RunIndex(path)
    assert len(index) == 2
    assert index.summary()["torn"] == [str(path)]


def test_an_unreadable_line_is_named_and_the_other_rows_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    good = orjson.dumps(scored(0, "Oslo", 1.0))
    path.write_bytes(good + b"\n{not json\n" + good + b"\n")
    index = RunIndex(path)
    assert len(index) == 2
    assert index.summary()["unreadable"][0]["line"] == 2


def test_a_file_that_holds_no_rows_is_one_input_error_naming_its_line(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text("hello\nworld\n")
    with pytest.raises(InputError, match=r"notes.jsonl:1: not a rollouts file"):
        RunIndex(path)
    with pytest.raises(InputError, match="no such rollouts file"):
        RunIndex(tmp_path / "missing.jsonl")
    with pytest.raises(InputError, match="a directory: name the rollouts file"):
        RunIndex(tmp_path)


def test_a_failures_file_alone_is_a_run_of_failures(tmp_path: Path) -> None:
    path = write_run(
        tmp_path / "only_failures.jsonl", [failed(0, FailureKind.MODEL_ERROR, "HTTP 500")]
    )
    summary = RunIndex(path).summary()
    assert (summary["scored"], summary["failed_by_kind"]) == (0, {"model_error": 1})
    assert summary["mean_reward"] is None


def test_a_100000_row_file_is_indexed_once_and_pages_read_only_their_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = RunIndex(big_run(tmp_path / "big.jsonl", 100_000))
    assert len(index) == 100_000
    assert index.summary()["failed"] == 2000
    reads: list[int] = []
    real_read = RunIndex.read

    def counted_read(self: RunIndex, n: int) -> JsonDict:
        reads.append(n)
        return real_read(self, n)

    monkeypatch.setattr(RunIndex, "read", counted_read)
    matched, page = index.select(Query(sort="tokens", descending=True, kind="scored", limit=100))
    assert matched == 98_000
    assert len(page) == 100
    assert index.read(page[0])["response"]["usage"]["total_tokens"] == 100 + 996
    assert reads == [page[0]]  # filtering and sorting read no row from disk


def test_rows_a_running_collection_appends_are_indexed_on_refresh(tmp_path: Path) -> None:
    path = write_run(tmp_path / "run.jsonl", [scored(0, "Oslo", 1.0), scored(1, "Lima", 0.0)])
    index = RunIndex(path)
    assert index.refresh() is False  # nothing new: nothing read again
    line = orjson.dumps(scored(3, "Rome", 1.0)) + b"\n"
    with open(path, "ab") as out:
        out.write(orjson.dumps(scored(2, "Quito", 1.0)) + b"\n" + line[:30])
    assert index.refresh() is True
    assert len(index) == 3
    assert index.summary()["torn"] == [str(path)]
    with open(path, "ab") as out:
        out.write(line[30:])  # the writer finished its line
    assert index.refresh() is True
    assert [index.read(n)["_ng_task_index"] for n in range(len(index))] == [0, 1, 2, 3]
    assert index.summary()["torn"] == []
    assert index.select(Query(text="rome"))[1] == [3]  # a search made before sees new rows
    failures = tmp_path / "run_failures.jsonl"
    failures.write_bytes(orjson.dumps(failed(4, FailureKind.TIMEOUT, "slow")) + b"\n")
    assert index.refresh() is True  # the failures file appeared
    assert (len(index), index.where(4)["source"], index.generation) == (5, "failures", 0)


def test_a_failures_file_rewritten_by_a_resume_is_indexed_again_from_the_start(
    tmp_path: Path,
) -> None:
    path = write_run(
        tmp_path / "run.jsonl",
        [scored(0, "Oslo", 1.0)],
        [failed(1, FailureKind.TIMEOUT, "slow"), failed(2, FailureKind.TOOL_ERROR, "boom")],
    )
    index = RunIndex(path)
    assert len(index) == 3
    write_run(path, [scored(0, "Oslo", 1.0), scored(1, "Lima", 1.0)], [])
    (tmp_path / "run_failures.jsonl").write_bytes(
        orjson.dumps(failed(2, FailureKind.TOOL_ERROR, "boom")) + b"\n"
    )
    assert index.refresh() is True
    assert index.generation == 1
    assert index.summary()["failed_by_kind"] == {"tool_error": 1}
    assert [index.read(n)["_ng_task_index"] for n in range(len(index))] == [0, 1, 2]

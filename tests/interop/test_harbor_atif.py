"""ATIF both ways against Harbor 0.26's own package (its peer venv, Python 3.12).

palaestra's export of a run (scored rollouts with token ids and policy versions, a simulated
user, failures with and without a trajectory) passes Harbor's ``TrajectoryValidator``; what
Harbor's ``Trajectory`` model keeps of each file reads back as the very row; Harbor's usage
sum sees each call's tokens. A trajectory Harbor's models write reads as a palaestra row.
"""

from __future__ import annotations

import copy
from pathlib import Path

import orjson

from palaestra.collection.records import input_error_row
from palaestra.errors import InputError
from palaestra.run.atif import export_atif, read_trajectories
from palaestra.wire.atif import from_trajectory
from tests.interop.peer_run import run_peer
from tests.viewer.rows import simulated_user, small_run, write_run
from tests.wire.test_atif import ROWS


def test_harbor_validates_the_atif_palaestra_writes_and_palaestra_reads_harbors(
    tmp_path: Path,
) -> None:
    run = small_run(tmp_path / "run.jsonl")
    rows = [orjson.loads(line) for line in run.read_bytes().splitlines()]
    failures = run.with_name("run_failures.jsonl")
    failed = [orjson.loads(line) for line in failures.read_bytes().splitlines()]
    extra = [copy.deepcopy(ROWS["tool calls with token ids"]), simulated_user(20, 0.0)]
    extra[0]["_ng_task_index"] = 30
    unread = dict(input_error_row(InputError("bad JSON", path="t.jsonl", line=9), task_index=31))
    write_run(run, rows + extra, [*failed, unread])
    exported = export_atif(run, tmp_path / "atif")
    assert (exported.scored, exported.failed) == (len(rows) + 2, len(failed) + 1)

    theirs = run_peer(
        "harbor",
        "harbor_atif.py",
        {"root": str(tmp_path / "atif"), "written": str(tmp_path / "harbor.json")},
        cwd=tmp_path,
    )
    assert len(theirs["files"]) == exported.scored + exported.failed
    everything = {
        (row.get("_ng_task_index"), "failure" in row): row
        for row in rows + extra + failed + [unread]
    }
    for file in theirs["files"]:
        assert file["valid"], (file["name"], file["errors"])
        assert file["schema_version"] == "ATIF-v1.7"
        back = from_trajectory(file["kept"])  # what Harbor keeps of the file is the row
        assert back == everything[(back.get("_ng_task_index"), "failure" in back)]
    tokens = {f["name"]: f["output_tokens"] for f in theirs["files"]}
    assert tokens["task30_rollout0.json"] > 0  # each call's completion tokens, summed by Harbor

    assert theirs["written_valid"], theirs["written_errors"]
    (row,) = read_trajectories(tmp_path / "harbor.json")
    assert row["reward"] == 1.0
    assert row["responses_create_params"]["input"] == [
        {"role": "user", "content": "Count the files in /app."}
    ]
    message, call, result, answer = row["response"]["output"]
    assert (call["name"], call["arguments"]) == ("bash", '{"cmd":"ls /app"}')
    assert (call["generation_token_ids"], call["generation_log_probs"]) == ([4, 5], [-0.1, -0.2])
    assert (result["call_id"], result["output"]) == ("c1", "a.txt\nb.txt")
    assert message["content"][0]["text"] == "I will list them."
    assert answer["content"][0]["text"] == "There are 2 files."

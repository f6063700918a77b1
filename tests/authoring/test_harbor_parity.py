"""The parity table and file: a task whose two runners disagree, or where one side failed,
is never counted as the same."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from palaestra.authoring.harbor_parity import (
    Score,
    TaskParity,
    experiment,
    harbor_score,
    image_prefix,
    table,
    task_folders,
)
from palaestra.environment.kinds.harbor.tasks import unpacked
from tests.support.harbor_folders import components_task


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


def test_both_runners_refusing_the_reward_file_is_the_same_and_other_failures_are_not() -> None:
    refused = Score(None, "Non-numeric reward 'x' in JSON file", "VerifierOutputParseError")
    ours = Score(None, "verifier_error: reward.json: key 'note' is 'x'", "verifier_error")
    harbor_crashed = Score(None, "docker build failed", "RuntimeError")
    sandbox = Score(None, "sandbox_error: no image", "sandbox_error")
    assert parity("both-refuse", refused, ours).same("oracle", "oracle")
    assert not parity("harbor-crashed", harbor_crashed, ours).same("oracle", "oracle")
    assert not parity("ours-broke", refused, sandbox).same("oracle", "oracle")
    assert not parity("ours-scored", refused, Score(0.0)).same("oracle", "oracle")
    assert "| both-refuse | error (Non-numeric reward 'x' in JSON file) |" in table(
        [parity("both-refuse", refused, ours)]
    )
    assert table([parity("both-refuse", refused, ours)]).endswith("| yes |")


def test_tests_that_leave_no_reward_are_harbors_missing_reward_and_palaestras_unverified_0() -> (
    None
):
    missing = Score(None, "No reward file found at /logs/verifier", "RewardFileNotFoundError")
    unverified = Score(0.0, unverified="the tests wrote no reward | exit 0")
    crashed = Score(None, "docker compose up failed", "RuntimeError")
    assert parity("none-written", missing, unverified).same("oracle", "oracle")
    assert not parity("harbor-crashed", crashed, unverified).same("oracle", "oracle")
    assert not parity("harbor-scored", Score(1.0), unverified).same("oracle", "oracle")
    assert not parity("harbor-1", missing, Score(0.0)).same("oracle", "oracle")
    assert table([parity("none-written", missing, unverified)]).splitlines()[-1] == (
        "| none-written | error (No reward file found at /logs/verifier) "
        "| 0 (unverified: the tests wrote no reward \\| exit 0) | 0 | 0 | yes |"
    )


FAKE_HARBOR = """\
#!/bin/bash
# Writes the result.json a Harbor trial of the real runner would leave in --trials-dir.
while [ $# -gt 0 ]; do [ "$1" = --trials-dir ] && trials=$2; shift; done
mkdir -p "$trials/t__1"
sed "s|TRIAL|$trials/t__1|g" "$(dirname "$0")/result.json" > "$trials/t__1/result.json"
"""


def harbor_result(tmp_path: Path, result: str) -> Score:
    harbor = tmp_path / "bin" / "harbor"
    harbor.parent.mkdir()
    harbor.write_text(FAKE_HARBOR)
    harbor.chmod(0o755)
    (harbor.parent / "result.json").write_text(result)
    return harbor_score(harbor, tmp_path / "task", "oracle", tmp_path / "work", 60)


def test_harbors_trial_without_reward_says_why_with_paths_from_its_folder(tmp_path: Path) -> None:
    message = "No reward file found at TRIAL/verifier/reward.txt or TRIAL/verifier/reward.json"
    result = {"exception_info": {"exception_type": "RewardFileNotFoundError"}}
    result["exception_info"]["exception_message"] = message
    assert harbor_result(tmp_path, json.dumps(result)) == Score(
        None,
        "No reward file found at verifier/reward.txt or verifier/reward.json",
        "RewardFileNotFoundError",
    )


@pytest.mark.parametrize(
    ("rewards", "score"),
    [
        ({"reward": 0.5, "exists": 1}, Score(0.5)),
        ({"exists": 1}, Score(1.0)),
        ({"a": 1, "b": 0}, Score(None, "components a, b, none named reward")),
    ],
)
def test_harbors_reward_is_its_reward_component_or_its_only_one(
    tmp_path: Path, rewards: dict[str, float], score: Score
) -> None:
    assert harbor_result(tmp_path, json.dumps({"verifier_result": {"rewards": rewards}})) == score


def test_the_images_of_a_folders_trials_are_known_by_harbors_trial_name() -> None:
    long = Path("tasks/sympy__polytools__fromdict__0c2c1234abcd")
    assert image_prefix(long) == "sympy__polytools__fromdict__0c2c__"
    assert (
        image_prefix(Path("automat__core__initialState_ab")) == "automat__core__initialstate_ab__"
    )
    assert image_prefix(Path("a-b_c" + "x" * 26 + "__tail")) == "a-b_c" + "x" * 26 + "__"
    assert image_prefix(Path("yaql__language.lexer__tFUNC__8f0a5edf")) == (
        "yaql__language-lexer__tfunc__8f0__"
    )
    assert image_prefix(Path("_x.y")) == "0_x-y__"


def test_an_archive_of_task_folders_gives_the_folders_it_unpacks_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for name in ("a", "b", "c"):
        components_task(tmp_path / "tasks" / name)
    archive = tmp_path / "tasks.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "tasks", arcname=".")
    folders = task_folders(archive, None, 0)
    assert [folder.name for folder in folders] == ["a", "b", "c"]
    assert all(folder.parent == unpacked(archive) for folder in folders)
    assert len(task_folders(archive, 2, 0)) == 2

from __future__ import annotations

from pathlib import Path

import pytest

from palaestra.collection.identity import check_same_run, differences, read_identity
from palaestra.errors import ConfigError

RUN = {
    "palaestra_version": "0.1.0",
    "env": "weather",
    "agent": {"name": "tool_calling", "max_steps": 8},
    "model": {"spec": "http://127.0.0.1:8000/v1", "name": None},
    "input": {"path": "/data/a.jsonl", "sha256": "aa", "size": 10, "mtime_ns": 1},
    "repeats": 4,
    "sampling": {},
}


def test_the_same_run_elsewhere_or_on_another_version_has_no_difference() -> None:
    moved = {**RUN, "palaestra_version": "0.2.0"}
    moved["input"] = {"path": "/elsewhere/a.jsonl", "sha256": "aa", "size": 10, "mtime_ns": 9}
    assert differences(RUN, moved) == []


def test_each_changed_field_is_named_with_both_values() -> None:
    other = {
        **RUN,
        "repeats": 2,
        "agent": {"name": "tool_calling", "max_steps": 16},
        "sampling": {"temperature": 0.7},
        "input": {**RUN["input"], "sha256": "bb"},  # type: ignore[dict-item]
    }
    assert differences(RUN, other) == [
        "agent.max_steps: the run has 8, this command has 16",
        'input.sha256: the run has "aa", this command has "bb"',
        "repeats: the run has 4, this command has 2",
        "sampling.temperature: the run has no value, this command has 0.7",
    ]
    with pytest.raises(ConfigError, match=r"cannot resume: this is not the run recorded in"):
        check_same_run(Path("out_run.json"), RUN, other)


def test_fields_a_later_version_adds_do_not_block_resuming_an_older_run() -> None:
    assert differences(RUN, {**RUN, "spec": {"anything": 1}}) == []


HARBOR = {
    **RUN,
    "env": {"name": "harbor", "args": {"path": "/proj/tasks", "sandbox": "rootfs"}},
    "input": {**RUN["input"], "sha256": "aa"},  # type: ignore[dict-item]
}


def place(path: str, sha256: str, tasks: str | None, located: bool = True) -> dict[str, object]:
    """``HARBOR`` at ``path``: its rows' digest, and the one without their folders' paths."""
    env = {"name": "harbor", "args": {"path": path, "sandbox": "rootfs"}}
    if located:
        env["located"] = ["path"]
    given = {**HARBOR["input"], "sha256": sha256}  # type: ignore[dict-item]
    if tasks is not None:
        given["tasks_sha256"] = tasks
    return {**HARBOR, "env": env, "input": given}


def test_task_folders_moved_elsewhere_are_the_same_run_and_changed_ones_are_not() -> None:
    here = place("/proj/tasks", "aa", "tt")
    assert differences(here, place("/moved/tasks", "bb", "tt")) == []
    assert differences(here, place("/moved/tasks", "bb", "uu")) == [
        'input.tasks_sha256: the run has "tt", this command has "uu"'
    ]
    unlocated = place("/moved/tasks", "bb", "tt", located=False)
    assert differences(here, unlocated) == [
        'env.args.path: the run has "/proj/tasks", this command has "/moved/tasks"'
    ]


def test_a_run_recorded_before_task_digests_were_compared_compares_as_it_did() -> None:
    older = place("/proj/tasks", "aa", None, located=False)
    assert differences(older, place("/proj/tasks", "aa", "tt")) == []
    assert differences(older, place("/moved/tasks", "bb", "tt")) == [
        'env.args.path: the run has "/proj/tasks", this command has "/moved/tasks"',
        'input.sha256: the run has "aa", this command has "bb"',
    ]


def test_a_damaged_identity_file_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "out_run.json"
    assert read_identity(path) is None
    path.write_text("{half")
    with pytest.raises(ConfigError, match=r"out_run.json is not valid JSON.*delete it"):
        read_identity(path)


def test_a_run_of_another_environment_version_is_refused_and_one_before_versions_resumes() -> None:
    versioned = {**RUN, "env": {"name": "games", "version": 1}}
    bumped = {**RUN, "env": {"name": "games", "version": 2}}
    assert differences(versioned, bumped) == ["env.version: the run has 1, this command has 2"]
    before_versions = {**RUN, "env": {"name": "games"}}
    assert differences(before_versions, bumped) == []

"""The folders ``palaestra tasks ENV --format harbor`` writes, read by Harbor's own package.

Harbor 0.26 (its peer venv, Python 3.12) loads each calculator folder with its ``Task`` class
(TaskConfig validation, layout and verifier-script checks, ``Task.is_valid_dir``) and lints it
with its default rules, and its ``harbor lint`` command runs on them: no finding (the tests run
in a separate verifier machine given the answer file as the task's artifact, as ``harbor
init`` writes tasks).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from palaestra.run.harbor_export import export_harbor
from palaestra.wire.harbor import parse_config, read_tasks
from tests.interop.peer_run import run_peer
from tests.support.peers import peer_python


def test_harbor_loads_and_lints_the_folders_palaestra_writes(tmp_path: Path) -> None:
    assert export_harbor("calculator", tmp_path / "out") == 10
    ours = {task.name: task for task in read_tasks(tmp_path / "out")}
    theirs = run_peer("harbor", "harbor_tasks.py", {"root": str(tmp_path / "out")}, cwd=tmp_path)
    assert [task["name"] for task in theirs["tasks"]] == sorted(ours)
    for task in theirs["tasks"]:
        mine = ours[task["name"]]
        assert task["valid"] and task["has_solution"]
        assert task["instruction"] == mine.instruction
        assert task["schema_version"] == mine.config.schema_version == "1.4"
        assert task["network_mode"] == "no-network"
        environment = mine.config.environment
        assert (task["cpus"], task["memory_mb"], task["storage_mb"]) == (
            environment.cpus,
            environment.memory_mb,
            environment.storage_mb,
        )
        assert task["build_timeout_sec"] == environment.build_timeout_sec
        assert task["agent_timeout_sec"] == mine.config.agent.timeout_sec
        assert task["agent_user"] == mine.config.agent.user == "agent"
        assert task["verifier_timeout_sec"] == mine.config.verifier.timeout_sec
        assert task["metadata"] == mine.config.metadata
        assert task["findings"] == [], task["findings"]
        assert mine.config.verifier.environment_mode == "separate"
    folders = sorted((tmp_path / "out").iterdir())
    lint = subprocess.run(
        [str(peer_python("harbor").with_name("harbor")), "lint", "--json", *map(str, folders)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (lint.returncode, json.loads(lint.stdout)) == (0, []), lint.stdout + lint.stderr

    # Harbor writing a task.toml with every section it has: palaestra reads each key.
    config = parse_config(theirs["harbor_written"], "harbor's task.toml")
    assert config.task is not None and config.task.name == "org/name"
    assert config.verifier.environment_mode == "separate"
    assert config.verifier.environment is not None and config.verifier.environment.cpus == 1
    assert config.agent.allowed_hosts == ["example.com"] and config.agent.user == 1000
    assert (config.environment.cpus, config.environment.workdir) == (2.5, "/app")
    assert config.solution.env == {"C": "3"} and config.artifacts == ["/logs/out"]


def test_harbor_lint_passes_on_the_terminal_and_swe_local_folders_written(tmp_path: Path) -> None:
    folders: list[Path] = []
    for env, count in (("terminal", 3), ("swe_local", 2)):
        assert export_harbor(env, tmp_path / env, num_tasks=count) == count
        folders += sorted((tmp_path / env).iterdir())
    for folder in folders:  # each says why its tests share the agent's machine, and only that
        config = read_tasks(folder)[0].config
        assert config.metadata["harbor"] == {"lint": {"ignore": ["shared-verifier"]}}
        assert not config.separate_verifier()
    lint = subprocess.run(
        [str(peer_python("harbor").with_name("harbor")), "lint", "--json", *map(str, folders)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (lint.returncode, json.loads(lint.stdout)) == (0, []), lint.stdout + lint.stderr

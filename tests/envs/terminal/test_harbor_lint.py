"""Every shipped terminal task, loaded and linted by Harbor's own package (its peer venv).

Harbor 0.26's ``Task`` class validates each folder (task.toml, layout, verifier script) and
its default lint rules run; the one finding allowed is ``shared-verifier`` (the checks read
the machine the agent leaves, so they run in it: Harbor's default mode)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from palaestra.environment.kinds.harbor.tasks import unpacked
from palaestra.envs.terminal.environment import ARCHIVE
from scripts.datasets.terminal.generate import MANIFEST
from tests.interop.peer_run import run_peer

SHIPPED = unpacked(ARCHIVE)


def test_harbor_loads_and_lints_every_shipped_task(tmp_path: Path) -> None:
    ids = [entry["id"] for entry in json.loads((SHIPPED / MANIFEST).read_text())["tasks"]]
    for task_id in ids:  # a folder of task folders only (Harbor reads every child)
        shutil.copytree(SHIPPED / task_id, tmp_path / "tasks" / task_id, symlinks=True)
    theirs = run_peer("harbor", "harbor_tasks.py", {"root": str(tmp_path / "tasks")}, cwd=tmp_path)
    assert sorted(task["name"] for task in theirs["tasks"]) == sorted(ids)
    for task in theirs["tasks"]:
        assert task["valid"] and task["has_solution"], task["name"]
        assert task["network_mode"] == "no-network"
        assert [f["rule"] for f in task["findings"]] == ["shared-verifier"], task["findings"]

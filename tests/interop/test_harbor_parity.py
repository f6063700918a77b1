"""``palaestra harbor parity``: one task folder run by Harbor 0.26's own runner (its Docker
environment made offline by the command's plug-in, its oracle and nop agents) and by palaestra
(oracle and null, Docker provider), with the rewards compared and written as Harbor's
``parity_experiment.json``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from palaestra.authoring.harbor_parity import docker_images
from palaestra.cli import cli
from tests.environment.kinds.harbor.conftest import docker_or_skip
from tests.support.harbor_folders import components_task
from tests.support.peers import peer_python

TEST_SH = """\
#!/bin/bash
if [ "$(cat /app/out.txt 2>/dev/null)" = ok ]; then reward=1; else reward=0; fi
echo "$reward" > /logs/verifier/reward.txt
"""


def test_harbor_and_palaestra_give_one_task_the_same_rewards(tmp_path: Path) -> None:
    harbor = Path(peer_python("harbor")).parent / "harbor"
    docker_or_skip()
    if shutil.which("docker-compose") is None:
        pytest.skip("docker-compose is not installed (apt-get install docker-compose)")
    # reward.txt: one number, read alike by both runners.
    components_task(tmp_path / "tasks" / "ok-file", test_sh=TEST_SH)
    output = tmp_path / "parity"
    arguments = ["harbor", "parity", str(tmp_path / "tasks"), "--sandbox", "docker"]
    arguments += ["--harbor", str(harbor), "--name", "handmade", "--output", str(output)]
    result = CliRunner().invoke(cli, arguments)
    assert result.exit_code == 0, result.output
    # Harbor's trials kept their images for each other; the command removed them at the end.
    assert not [name for name in docker_images() if name.startswith("ok-file__")]
    assert "| ok-file | 1 | 1 | 0 | 0 | yes |" in result.output.splitlines()
    entries = json.loads(output.with_suffix(".json").read_text())
    assert [entry["agent"] for entry in entries] == [
        "oracle (harbor) / oracle (palaestra)",
        "nop (harbor) / null (palaestra)",
    ]
    oracle, nop = (entry["metrics"][0] for entry in entries)
    assert (oracle["original_runs"], oracle["harbor_runs"]) == ([1.0], [1.0])
    assert (nop["original_runs"], nop["harbor_runs"]) == ([0.0], [0.0])
    assert entries[0]["parity_benchmark_size"] == entries[0]["adapted_benchmark_size"] == 1

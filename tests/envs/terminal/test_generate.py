"""The terminal generator: deterministic for a seed, well-formed Harbor folders, and the
shipped tasks are exactly what the generator writes for the recorded seed."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from palaestra.environment.kinds.harbor.tasks import unpacked
from palaestra.envs.terminal.environment import ARCHIVE
from palaestra.wire.harbor import folder_digest, read_tasks
from scripts.datasets.terminal import agentbench
from scripts.datasets.terminal.generate import FAMILIES, MANIFEST, family_task, generate, main

SHIPPED = unpacked(ARCHIVE)


def test_the_same_seed_writes_identical_folders(tmp_path: Path) -> None:
    first = generate(tmp_path / "a", seed=3, per_family=4)
    second = generate(tmp_path / "b", seed=3, per_family=4)
    assert [e["digest"] for e in first] == [e["digest"] for e in second]
    other = generate(tmp_path / "c", seed=4, per_family=4)
    assert {e["digest"] for e in first}.isdisjoint(e["digest"] for e in other)


def test_folders_read_back_as_harbor_tasks_with_their_family_contract(tmp_path: Path) -> None:
    entries = generate(tmp_path / "out", seed=0, per_family=len(max(FAMILIES.values(), key=len)))
    tasks = read_tasks(tmp_path / "out")
    assert sorted(t.path.name for t in tasks) == sorted(e["id"] for e in entries)
    apt_lines: dict[str, set[str]] = {}
    for task in tasks:
        assert task.has_solution
        assert task.config.environment.network_mode == "no-network"
        dockerfile = (task.path / "environment" / "Dockerfile").read_text().splitlines()
        assert dockerfile[1] == "FROM debian:bookworm-slim"
        assert dockerfile[2].startswith("RUN apt-get update && apt-get install -y")
        apt_lines.setdefault(str(task.config.metadata["category"]), set()).add(dockerfile[2])
    assert set(apt_lines) == set(FAMILIES)
    assert all(len(lines) == 1 for lines in apt_lines.values()), apt_lines


def test_hidden_inputs_and_expected_outputs_are_not_in_the_machine(tmp_path: Path) -> None:
    """What a check compares with lives only in tests/: the agent cannot read it."""
    for family, kinds in FAMILIES.items():
        for index in range(len(kinds)):
            task = family_task(family, 0, index)
            visible = (
                "\n".join(
                    c if isinstance(c, str) else c.decode("latin-1") for c in task.files.values()
                )
                + task.instruction
            )
            hidden = {"EXPECTED", "CASES", "DIGEST", "DIGESTS"}
            namespace: dict[str, object] = {}
            for line in task.check.splitlines():  # the check's constants (JSON literals)
                if re.match(r"^[A-Z_]+ = json\.loads\(", line):
                    name, literal = line.split(" = ", 1)
                    namespace[name] = json.loads(ast.literal_eval(literal[len("json.loads(") : -1]))
            for name in hidden & namespace.keys():
                value = namespace[name]
                if name == "CASES":
                    assert isinstance(value, list)
                    for text, _expected in value:
                        assert text not in visible, (family, task.name)
                elif name == "EXPECTED" and isinstance(value, list):
                    assert "\n".join(value) not in visible, (family, task.name)


def test_every_kind_of_every_family_is_generated(tmp_path: Path) -> None:
    for family, kinds in FAMILIES.items():
        names = {family_task(family, 0, i).name for i in range(len(kinds))}
        assert len(names) == len(kinds), family


def test_the_cli_refuses_a_non_empty_output_and_an_unknown_family(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    assert main(["--per-family", "1", str(tmp_path / "full")]) == 2
    assert main(["--family", "nope", str(tmp_path / "new")]) == 2
    err = capsys.readouterr().err
    assert "not an empty directory" in err and "unknown family 'nope'" in err
    assert not (tmp_path / "new").exists()


def test_shipped_tasks_are_the_generators_output(tmp_path: Path) -> None:
    manifest = json.loads((SHIPPED / MANIFEST).read_text())
    regenerated = generate(
        tmp_path / "out", seed=manifest["seed"], per_family=manifest["per_family"]
    )
    shipped = [e for e in manifest["tasks"] if e["family"] != "agentbench"]
    assert [(e["id"], e["digest"]) for e in regenerated] == [
        (e["id"], e["digest"]) for e in shipped
    ]
    for entry in manifest["tasks"]:
        assert folder_digest(SHIPPED / entry["id"]) == entry["digest"], entry["id"]
    folders = {p.name for p in SHIPPED.iterdir() if p.is_dir()}
    assert folders == {e["id"] for e in manifest["tasks"]}


def test_agentbench_skips_what_cannot_run_offline() -> None:
    assert agentbench.skip_reason({"start": "python3 -c ...", "evaluation": {"match": "1"}})
    network = {"create": {"init": {"file": "init/stock-log.sh"}}, "evaluation": {"match": "1"}}
    assert "git repository" in str(agentbench.skip_reason(network))
    assert (
        agentbench.skip_reason(
            {"create": {"init": {"code": "touch a"}}, "evaluation": {"match": "1"}}
        )
        is None
    )
    manifest = json.loads((SHIPPED / MANIFEST).read_text())
    shipped = {e["id"] for e in manifest["tasks"] if e["family"] == "agentbench"}
    skipped = {s["id"] for s in manifest["skipped"]}
    assert shipped and skipped and shipped.isdisjoint(skipped)

"""A shipped Go task's verifier in a machine made on this host (``machine.py``): the oracle
scores 1, the untouched machine 0, and what an agent leaves besides a fix never scores."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from palaestra.envs.swe_local.languages.boxes import repo_of
from palaestra.envs.swe_local.languages.generator import MANIFEST_DIR
from tests.envs.swe_local.languages.machine import Machine

REPO = "go-shellquote"


def shipped_line() -> dict[str, Any]:
    """The first shipped task of ``REPO``."""
    text = (MANIFEST_DIR / f"{REPO}.jsonl").read_text(encoding="utf-8")
    line: dict[str, Any] = json.loads(text.splitlines()[0])
    return line


def installed(deb: str) -> bool:
    done = subprocess.run(["dpkg-query", "-W", deb], capture_output=True)
    return done.returncode == 0


@pytest.fixture
def machine(tmp_path: Path) -> Iterator[Machine]:
    line = shipped_line()
    if not installed(repo_of(line).deb) or shutil.which("go") is None:
        pytest.skip(f"needs golang-go and {repo_of(line).deb}")
    if shutil.which("bwrap") is None:
        pytest.skip("needs bubblewrap")
    yield Machine(line, tmp_path)


def test_the_oracle_scores_1_and_the_untouched_machine_0(machine: Machine) -> None:
    reward, said = machine.verify()
    assert reward == "0", said
    assert "not passed: " + machine.line["FAIL_TO_PASS"][0] in said
    machine.solve()
    assert machine.verify()[0] == "1"


SILENCE = "sed -i 's/t\\.\\(Error\\|Fatal\\)\\(f\\?\\)(/t.Log\\2(/g' {file}"
"""A test file's failures made silent (its tests pass, reporting nothing)."""
EVERY = "for f in *_test.go; do {command}; done"
CHEATS = {
    "test_files_silenced": [EVERY.format(command=SILENCE.format(file="$f"))],
    "test_files_silenced_and_committed": [
        EVERY.format(command=SILENCE.format(file="$f")) + " && git commit -qam fix"
    ],
    "test_files_edited_and_their_objects_forged": [
        EVERY.format(
            command='old=$(git rev-parse HEAD:$f) && ' + SILENCE.format(file="$f")
            + ' && new=$(git hash-object -w $f)'
            ' && cp -f ".git/objects/${new:0:2}/${new:2}" ".git/objects/${old:0:2}/${old:2}"'
        )
    ],
    "untracked_file_exits_0": [
        "printf 'package shellquote\\nimport \"os\"\\nfunc init() { os.Exit(0) }\\n' > zz.go"
    ],
    "go_mod_replaced": [
        "printf 'module github.com/kballard/go-shellquote\\ngo 1.19\\n"
        "replace example.com/x => ./x\\n' > go.mod && mkdir x"
    ],
}  # fmt: skip


@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_a_cheat_without_a_fix_scores_0(machine: Machine, cheat: str) -> None:
    for command in CHEATS[cheat]:
        machine.sh(command)
    if "test_files" in cheat:
        machine.sh("go test -count=1 .")  # the cheat works where nothing puts the tests back
    reward, said = machine.verify()
    assert reward == "0", said


def test_a_fix_scores_1_whatever_test_edits_and_files_it_leaves(machine: Machine) -> None:
    machine.solve()
    machine.sh(EVERY.format(command="echo '// x' >> $f") + " && echo notes > notes.txt")
    reward, said = machine.verify()
    assert reward == "1", said
    assert "removed (not in the base commit): notes.txt" in said


RUST_REPO = "unicase"
RUST_SILENCE = "sed -i '/#\\[test\\]/{{n;s/{{$/{{ if true {{ return; }}/}}' {file}"
"""Every test of a file made to return at once (``fn t() { if true { return; } ...``)."""


@pytest.fixture
def rust_machine(tmp_path: Path) -> Iterator[Machine]:
    """A shipped Rust task of ``RUST_REPO`` whose failing test sits in the bug's own file."""
    text = (MANIFEST_DIR / f"{RUST_REPO}.jsonl").read_text(encoding="utf-8")
    lines = [json.loads(item) for item in text.splitlines()]
    line = next(
        (
            item
            for item in lines
            if item["FAIL_TO_PASS"][0].split("::")[2] == Path(item["files"][0]).stem
        ),
        None,
    )
    if line is None:
        pytest.fail(f"no shipped {RUST_REPO} task fails a test of the bug's own file")
    if not installed(repo_of(line).deb) or not Path("/usr/bin/cargo").exists():
        pytest.skip(f"needs cargo and {repo_of(line).deb}")
    yield Machine(line, tmp_path)


def test_a_rust_task_scores_its_oracle_1_and_its_untouched_machine_0(
    rust_machine: Machine,
) -> None:
    reward, said = rust_machine.verify()
    assert reward == "0", said
    rust_machine.solve()
    assert rust_machine.verify()[0] == "1"


def test_a_rust_test_silenced_in_the_bugs_own_file_is_put_back(rust_machine: Machine) -> None:
    """The failing unit test is in the file the bug is in: the agent's edit of that file is
    kept above its test module, the module is the base's."""
    gold = rust_machine.line["files"][0]
    rust_machine.sh(RUST_SILENCE.format(file=gold))
    assert rust_machine.sh("git diff --stat")
    reward, said = rust_machine.verify()
    assert reward == "0", said
    assert f"put back: {gold} (its test module)" in said

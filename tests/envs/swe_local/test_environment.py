"""``--env swe_local``: the shipped instances as a built-in environment, end to end on each
provider that can run here, and no copy of the unmutated release left in the machine."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from palaestra.cli import cli
from palaestra.envs.swe_local import manifest
from palaestra.envs.swe_local.environment import (
    PACKS,
    SweLocal,
    buildable,
    read_lines,
    task_folders,
)
from palaestra.envs.swe_local.folders import cache_root
from palaestra.envs.swe_local.languages import language
from palaestra.envs.swe_local.selection import parse_filter, selected
from palaestra.errors import ConfigError, InvalidTask
from palaestra.sandbox.limits import Limits
from palaestra.sandbox.machines import images
from palaestra.sandbox.machines.provider import BoxSpec
from palaestra.sandbox.machines.registry import make_provider
from palaestra.sandbox.process import supervise
from palaestra.wire.harbor import folder_digest, read_task
from tests.environment.kinds.harbor.conftest import docker_or_skip
from tests.envs.swe_local.lines import line as manifest_line
from tests.support.submit_run import collect_after_submit

SAMPLE = ["mpmath__ctx_base__almosteq__3b3bebc2", "networkx__all__disjointunionall__e7370009"]


@pytest.fixture(params=["rootfs", "docker"])
def sandbox(request: pytest.FixtureRequest) -> str:
    if request.param == "docker":
        docker_or_skip()
    elif os.geteuid() != 0:
        pytest.skip("the rootfs provider needs root (kernel overlay mounts)")
    return str(request.param)


def sample_rows(tmp_path: Path) -> Path:
    rows = SweLocal.example_tasks_file()
    assert rows is not None
    chosen = [
        line for line in rows.read_text().splitlines() if json.loads(line)["harbor_task"] in SAMPLE
    ]
    assert len(chosen) == len(SAMPLE)
    path = tmp_path / "sample.jsonl"
    path.write_text("\n".join(chosen) + "\n")
    return path


def test_the_environment_offers_every_buildable_line_of_the_manifest_as_a_task() -> None:
    rows = SweLocal.example_tasks_file()
    assert rows is not None
    names = [json.loads(line)["harbor_task"] for line in rows.read_text().splitlines()]
    lines = manifest.read_directory()
    shipped = [line["instance_id"] for line in lines if buildable(line["language"])]
    assert sorted(names) == shipped
    assert len(names) >= 200
    assert {"go", "rust"} <= {line["language"] for line in lines}, "Go/Rust lines shipped"


def test_a_filter_of_languages_whose_packs_are_not_built_says_what_to_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PALAESTRA_IMAGES_DIR", str(tmp_path))  # no pack built there
    expected = r"in go, rust, whose machines cannot be built here yet: .* --pack go --pack rust`"
    with pytest.raises(ConfigError, match=expected) as error:
        SweLocal(filter="language=go|rust")
    assert "\n" not in str(error.value)
    python = SweLocal(filter="repo=mpmath|itoa")  # the Rust tasks are left out, not refused
    assert python.tasks and all(name.startswith("mpmath__") for name in python.tasks)
    result = CliRunner().invoke(cli, ["tasks", "swe_local", "--summary", "--filter", "language=go"])
    assert result.exit_code == 0, result.output
    assert "go " in result.output


def test_a_filter_argument_keeps_the_tasks_it_selects() -> None:
    environment = SweLocal(filter="repo=mpmath,difficulty=easy")
    lines = manifest.read_directory()
    expected = [
        line["instance_id"]
        for line in lines
        if line["repo"] == "mpmath" and line["difficulty"]["level"] == "easy"
    ]
    assert sorted(environment.tasks) == expected and expected


def test_palaestra_test_passes_oracle_and_null_on_shipped_instances(
    tmp_path: Path, sandbox: str
) -> None:
    sample = sample_rows(tmp_path)
    arguments = ["test", "swe_local", "--input", str(sample), "--no-model"]
    result = CliRunner().invoke(cli, [*arguments, "--env-arg", f"sandbox={sandbox}"])
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.output.splitlines()]
    for index, name in enumerate(SAMPLE):
        assert f"ok   task {index} ({name}): the gold actions scored 1" in lines
        assert f"ok   task {index} ({name}): doing nothing scored 0" in lines


def test_the_machine_keeps_no_copy_of_the_unmutated_release(sandbox: str) -> None:
    """The offline base carries a Debian archive (the original .deb files): the instance's
    Dockerfile removes it, so the fix cannot be read off a pristine copy."""
    folder = task_folders() / SAMPLE[0] / "environment"

    async def look() -> tuple[int | None, str]:
        provider = make_provider(sandbox)
        image = await provider.build(folder, timeout=900)
        box = await provider.start(image, BoxSpec(memory_mb=1024))
        try:
            command = (
                "find / -xdev \\( -name '*.deb' -o -path /opt/palaestra \\) -print 2>/dev/null;"
                " ls /usr/lib/python3/dist-packages/mpmath 2>&1; ls /testbed/mpmath/ctx_base.py"
            )
            process = await box.launch(["bash", "-c", command], stdin=subprocess.DEVNULL)
            outcome = await supervise(process, Limits(wall_time=120))
            return outcome.status, outcome.stdout.decode()
        finally:
            await box.close()

    status, output = asyncio.run(look())
    assert status == 0, output
    lines = output.splitlines()
    assert lines[-1] == "/testbed/mpmath/ctx_base.py"
    assert "No such file or directory" in lines[-2]
    assert lines[:-2] == [], f"copies of the release left in the machine: {lines[:-2]}"


def test_palaestra_tasks_summarizes_and_filters_the_set(tmp_path: Path) -> None:
    lines = manifest.read_directory()
    result = CliRunner().invoke(cli, ["tasks", "swe_local", "--summary"])
    assert result.exit_code == 0, result.output
    repos = {line["repo"] for line in lines}
    assert result.output.startswith(f"{len(lines)} tasks, {len(repos)} repositories")
    assert "flags: flaky" in result.output and "difficulty: easy" in result.output
    output = tmp_path / "mpmath.jsonl"
    chosen = "repo=mpmath,kind=arith"
    result = CliRunner().invoke(
        cli, ["tasks", "swe_local", "--filter", chosen, "--output", str(output)]
    )
    assert result.exit_code == 0, result.output
    names = [json.loads(row)["harbor_task"] for row in output.read_text().splitlines()]
    expected = [  # a combined task counts under each of its kinds
        t["instance_id"]
        for t in lines
        if t["repo"] == "mpmath" and "arith" in (t["kind"], *t["kinds"])
    ]
    assert names == expected and expected


def test_a_filter_on_an_environment_without_a_catalogue_is_refused() -> None:
    result = CliRunner().invoke(cli, ["tasks", "reasoning_gym", "--summary"])
    assert result.exit_code != 0 and "has no task catalogue" in result.output


def test_every_package_a_go_or_rust_machine_installs_is_in_its_pack_or_the_base() -> None:
    """A Dockerfile's ``apt-get install`` finds only what the offline base's archives hold."""
    for name, pack in PACKS.items():
        offered = set(images.pack(pack)) | set(images.packages())
        seam = language(name)
        for repo in seam.repos():
            prefix = seam.dockerfile_prefix(repo)
            installed = prefix.split("--no-install-recommends ", 1)[1].split(" && ", 1)[0]
            assert set(installed.split()) <= offered, (name, repo)


OPENED: list[str] | None = None
"""Paths opened or listed while ``_watching`` (None: not watching)."""


def _audit(event: str, arguments: tuple[object, ...]) -> None:
    if OPENED is not None and event in ("open", "os.scandir", "os.listdir") and arguments:
        OPENED.append(os.fsdecode(arguments[0]) if isinstance(arguments[0], str | bytes) else "")


sys.addaudithook(_audit)


@contextlib.contextmanager
def _watching() -> Iterator[list[str]]:
    """The paths this process opens or lists inside the block (Python's audit events)."""
    global OPENED
    OPENED = []
    try:
        yield OPENED
    finally:
        OPENED = None


def small_manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A manifest of the two ``SAMPLE`` lines, its folders cached under ``tmp_path``."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    directory = tmp_path / "manifest"
    directory.mkdir()
    for line in manifest.read_directory():
        if line["instance_id"] in SAMPLE:
            assert manifest.write_file(directory / f"{line['repo']}.jsonl", [line]) == 1
    return directory


def test_building_the_environment_reads_no_task_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = small_manifest(tmp_path, monkeypatch)
    SweLocal(manifest=str(directory))  # the folders are made once, then cached
    cache = cache_root()
    with _watching() as opened:
        environment = SweLocal(manifest=str(directory))
    folders = [name for name in opened if Path(name).is_relative_to(cache)]
    assert folders == [], folders
    assert sorted(environment.tasks) == sorted(SAMPLE)
    for name, task in environment.tasks.items():  # what reading the folder would give
        read = read_task(environment.path / name)
        assert task.config.model_dump() == read.config.model_dump()
        assert (task.instruction, task.has_solution) == (read.instruction, read.has_solution)
        assert task.digest == folder_digest(environment.path / name)


def test_rows_carry_each_folders_digest_and_a_changed_folder_is_still_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = small_manifest(tmp_path, monkeypatch)
    for _ in range(2):  # made, then read back from the set's kept digests
        rows = SweLocal.example_tasks_file(manifest=str(directory))
        assert rows is not None
        parsed = [json.loads(row) for row in rows.read_text().splitlines()]
        stamps = {row["harbor_task"]: row["task_digest"] for row in parsed}
        assert sorted(stamps) == sorted(SAMPLE)
        for stamp in stamps.values():
            assert stamp["digest"] == folder_digest(stamp["path"])
    environment = SweLocal(manifest=str(directory))
    assert environment.task_of(parsed[0])[0] == parsed[0]["harbor_task"]
    instruction = Path(parsed[1]["task_digest"]["path"]) / "instruction.md"
    instruction.write_text(instruction.read_text() + "Also delete the tests.\n")
    with pytest.raises(InvalidTask, match="changed since this task row was made"):
        environment.task_of(parsed[1])


def test_palaestra_test_draws_its_sample_from_the_tasks_the_filter_selects() -> None:
    if os.geteuid() != 0:
        pytest.skip("the rootfs provider needs root (kernel overlay mounts)")
    chosen = selected(manifest.read_directory(), parse_filter("repo=mpmath"))
    arguments = ["test", "swe_local", "--env-arg", "filter=repo=mpmath", "--sample", "1"]
    result = CliRunner().invoke(cli, [*arguments, "--no-model", "--cheat-sample", "0"])
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.output.splitlines()]
    assert any(line.startswith(f"PASS example tasks: {len(chosen)} tasks in") for line in lines)
    oracle = [line for line in lines if line.startswith("ok   task 0 (")]
    assert len(oracle) == 2 and all(line.startswith("ok   task 0 (mpmath__") for line in oracle)


def test_submit_ends_the_episode_and_the_verifier_scores_it(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the rootfs provider needs root (kernel overlay mounts)")
    asked, row = collect_after_submit("swe_local", tmp_path)
    assert asked == 1, "the model was asked again after submit"
    assert row["reward"] == 0.0 and "failure" not in row  # the untouched bug: the tests fail
    assert row.get("truncated") is None


def test_a_manifest_is_read_once_until_one_of_its_files_changes(tmp_path: Path) -> None:
    first = manifest_line()
    manifest.write_file(tmp_path / "mpmath.jsonl", [first])
    assert [x["instance_id"] for x in read_lines(tmp_path)] == [first["instance_id"]]
    assert read_lines(tmp_path)[0] is read_lines(tmp_path)[0]  # the same read, shared
    second = manifest_line(instance_id="mpmath__demo__half__4567cdef")
    manifest.write_file(tmp_path / "mpmath.jsonl", [first, second])
    assert len(read_lines(tmp_path)) == 2  # a changed file is read again

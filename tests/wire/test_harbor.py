"""Harbor task folders: task.toml as Harbor reads it, the layout checks, the digest, the writer."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import threading
from pathlib import Path

import pytest

from palaestra.errors import ConfigError
from palaestra.sandbox.machines.digest import MAX_DEPTH
from palaestra.wire.harbor import (
    EnvironmentConfig,
    TaskConfig,
    TaskFolder,
    dump_config,
    folder_digest,
    parse_config,
    read_task,
    read_tasks,
    write_task,
)

# A task.toml as Harbor's own examples write it (the legacy spellings included).
HARBOR_TOML = """\
version = "1.0"

[metadata]
author_name = "someone"
difficulty = "easy"
category = "file-operations"
tags = ["bash", "files"]

[verifier]
timeout_sec = 120.0

[agent]
timeout_sec = 300.0

[environment]
build_timeout_sec = 900.0
cpus = 2
memory = "2G"
storage = "10G"
allow_internet = false
"""


def make_task(root: Path, *, toml: str = HARBOR_TOML, solution: bool = True) -> Path:
    root.mkdir(parents=True)
    (root / "task.toml").write_text(toml)
    (root / "instruction.md").write_text("Create /app/hello.txt containing hello.\n")
    (root / "environment").mkdir()
    (root / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
    (root / "tests").mkdir()
    (root / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    if solution:
        (root / "solution").mkdir()
        (root / "solution" / "solve.sh").write_text("#!/bin/bash\necho hello > /app/hello.txt\n")
    return root


def test_harbor_fields_and_legacy_spellings_read_as_harbor_reads_them(tmp_path: Path) -> None:
    task = read_task(make_task(tmp_path / "hello"))
    config = task.config
    assert config.schema_version == "1.0"  # `version` is the old name of schema_version
    assert config.verifier.timeout_sec == 120.0 and config.agent.timeout_sec == 300.0
    environment = config.environment
    assert (environment.build_timeout_sec, environment.cpus) == (900.0, 2)
    assert (environment.memory_mb, environment.storage_mb) == (2048, 10240)
    assert environment.network_mode == "no-network"  # allow_internet = false
    assert config.metadata["tags"] == ["bash", "files"]
    assert task.name == "hello" and task.has_solution
    assert task.instruction.startswith("Create /app/hello.txt")


def test_harbor_defaults_hold_when_the_file_says_nothing() -> None:
    config = parse_config("", "task.toml")
    assert config.verifier.timeout_sec == 600.0 and config.agent.timeout_sec is None
    assert config.environment.build_timeout_sec == 600.0
    assert config.environment.network_mode == "public"  # Harbor's default: say no-network
    assert config.verifier.environment_mode is None


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[verifier]\ntimout_sec = 5\n", "unknown key 'verifier.timout_sec'"),
        ("colour = 1\n", "unknown key 'colour'"),
        ("[environment]\ncpus = 'many'\n", "environment.cpus"),
        ("[environment]\nnetwork_mode = 'sometimes'\n", "environment.network_mode"),
        ("[agent]\nallowed_hosts = ['example.com']\n", "only valid when network_mode"),
        ("[task]\nname = 'no-org'\n", "task.name"),
        ("[verifier\n", "not valid TOML"),
    ],
)
def test_a_bad_task_toml_is_one_line_naming_the_file_and_the_field(
    tmp_path: Path, toml: str, message: str
) -> None:
    folder = make_task(tmp_path / "bad", toml=toml)
    with pytest.raises(ConfigError) as raised:
        read_task(folder)
    text = str(raised.value)
    assert "\n" not in text and str(folder / "task.toml") in text and message in text


@pytest.mark.parametrize(
    ("remove", "message"),
    [
        ("task.toml", "no task.toml"),
        ("instruction.md", "missing instruction.md"),
        ("environment/Dockerfile", "missing environment/Dockerfile"),
        ("tests/test.sh", "missing tests/test.sh"),
    ],
)
def test_a_folder_missing_a_part_is_named_with_the_part(
    tmp_path: Path, remove: str, message: str
) -> None:
    folder = make_task(tmp_path / "t")
    (folder / remove).unlink()
    with pytest.raises(ConfigError, match=message) as raised:
        read_task(folder)
    assert str(folder) in str(raised.value)


def test_a_prebuilt_image_needs_no_dockerfile_and_the_oracle_is_optional(tmp_path: Path) -> None:
    toml = '[environment]\ndocker_image = "debian:bookworm-slim"\n'
    folder = make_task(tmp_path / "t", toml=toml, solution=False)
    (folder / "environment" / "Dockerfile").unlink()
    task = read_task(folder)
    assert task.config.environment.docker_image == "debian:bookworm-slim"
    assert not task.has_solution


def test_an_empty_instruction_is_refused(tmp_path: Path) -> None:
    folder = make_task(tmp_path / "empty")
    (folder / "instruction.md").write_text(" \n")
    with pytest.raises(ConfigError, match=r"instruction\.md: empty"):
        read_task(folder)


def test_a_multi_step_task_reads_each_steps_instruction_tests_and_oracle(tmp_path: Path) -> None:
    toml = '[[steps]]\nname = "one"\n\n[[steps]]\nname = "two"\nmin_reward = 0.5\n'
    stepped = make_task(tmp_path / "steps", toml=toml)
    with pytest.raises(ConfigError, match=r"steps: no folder steps/one/"):
        read_task(stepped)
    for name in ("one", "two"):
        (stepped / "steps" / name).mkdir(parents=True)
        (stepped / "steps" / name / "instruction.md").write_text(f"do {name}\n")
    (stepped / "steps" / "two" / "tests").mkdir()
    (stepped / "steps" / "two" / "tests" / "test.sh").write_text(
        "echo 1 > /logs/verifier/reward.txt\n"
    )
    task = read_task(stepped)
    assert [step.name for step in task.steps] == ["one", "two"]
    assert task.instruction == "do one\n"
    assert task.steps[0].tests == stepped / "tests"  # the task's, as Harbor falls back
    assert task.steps[1].tests == stepped / "steps" / "two" / "tests"
    assert task.steps[1].solution == stepped / "solution"
    assert task.steps[1].config.min_reward == 0.5
    (stepped / "tests" / "test.sh").unlink()
    with pytest.raises(ConfigError, match=r"steps/one: missing tests/test.sh"):
        read_task(stepped)
    twice = make_task(tmp_path / "twice", toml='[[steps]]\nname = "a"\n[[steps]]\nname = "A"\n')
    with pytest.raises(ConfigError, match="two steps are named 'A'"):
        read_task(twice)


def test_a_folder_of_tasks_names_every_bad_task_one_line_each(tmp_path: Path) -> None:
    for name in ("a", "b", "c", "d"):
        make_task(tmp_path / "set" / name)
    (tmp_path / "set" / "b" / "instruction.md").unlink()
    (tmp_path / "set" / "d" / "task.toml").write_text("[agent]\ntimeout = 3\n")
    with pytest.raises(ConfigError) as raised:
        read_tasks(tmp_path / "set")
    lines = str(raised.value).splitlines()
    assert lines[0] == "2 of 4 task folders are refused:"
    assert "set/b: missing instruction.md" in lines[1]
    assert "set/d/task.toml: unknown key 'agent.timeout'" in lines[2]
    assert len(lines) == 3


def test_a_folder_of_task_folders_is_read_in_name_order_and_a_bad_one_is_named(
    tmp_path: Path,
) -> None:
    for name in ("b", "a", ".git"):
        make_task(tmp_path / "set" / name)
    assert [task.name for task in read_tasks(tmp_path / "set")] == ["a", "b"]
    assert [task.name for task in read_tasks(tmp_path / "set" / "a")] == ["a"]
    (tmp_path / "set" / "c").mkdir()
    with pytest.raises(ConfigError, match=r"set/c: not a Harbor task folder: no task.toml"):
        read_tasks(tmp_path / "set")
    with pytest.raises(ConfigError, match="neither a Harbor task folder"):
        read_tasks(tmp_path / "set" / "c")


def test_the_digest_changes_with_any_content_name_or_mode_and_only_then(tmp_path: Path) -> None:
    folder = make_task(tmp_path / "t")
    first = folder_digest(folder)
    assert first.startswith("sha256:") and folder_digest(folder) == first
    copy = make_task(tmp_path / "u")  # the same files elsewhere: the same digest
    assert folder_digest(copy) == first
    assert read_task(folder).digest == first

    test_script = folder / "tests" / "test.sh"
    test_script.write_text(test_script.read_text() + "# edited\n")
    edited = folder_digest(folder)
    assert edited != first
    test_script.chmod(0o755)
    assert folder_digest(folder) not in (first, edited)
    (folder / "tests" / "data.txt").write_text("")  # a new empty file counts too
    assert len({first, edited, folder_digest(folder)}) == 3
    renamed = make_task(tmp_path / "v")
    (renamed / "solution" / "solve.sh").rename(renamed / "solution" / "solve2.sh")
    assert folder_digest(renamed) != first


def test_a_written_folder_reads_back_with_the_same_config(tmp_path: Path) -> None:
    config = TaskConfig(
        metadata={"author_name": "palaestra", "tags": ["x"]},
        environment=EnvironmentConfig(cpus=1.0, memory_mb=512, network_mode="no-network"),
    )
    folder = TaskFolder(
        config=config,
        instruction="Do it.\n",
        dockerfile="FROM debian:bookworm-slim\n",
        test_script="#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
        tests={"task.json": "{}\n"},
        solve_script="#!/bin/bash\ntrue\n",
    )
    path = write_task(folder, tmp_path / "out" / "one")
    task = read_task(path)
    assert task.config == config and task.config.environment.cpus == 1
    assert isinstance(task.config.environment.cpus, int)  # written as Harbor writes 1.0
    assert (path / "tests" / "test.sh").stat().st_mode & 0o111
    assert (path / "solution" / "solve.sh").stat().st_mode & 0o111
    assert (path / "tests" / "task.json").read_text() == "{}\n"
    assert dump_config(config).startswith('schema_version = "1.4"\n')
    with pytest.raises(FileExistsError):
        write_task(folder, path)


@pytest.mark.parametrize(
    ("table", "line", "field"),
    [
        ("agent", "timeout_sec = -1.0", "agent.timeout_sec = -1.0: Input should be greater than 0"),
        ("agent", "timeout_sec = nan", "agent.timeout_sec = nan: Input should be a finite number"),
        ("agent", "timeout_sec = inf", "agent.timeout_sec = inf: Input should be a finite number"),
        ("verifier", "timeout_sec = 0", "verifier.timeout_sec = 0: Input should be greater than 0"),
        ("verifier", "timeout_sec = -5", "verifier.timeout_sec = -5"),
        ("verifier", "timeout_sec = -inf", "verifier.timeout_sec = -inf"),
        ("environment", "build_timeout_sec = nan", "environment.build_timeout_sec = nan"),
        ("environment", "build_timeout_sec = -1", "environment.build_timeout_sec = -1"),
        ("environment", "cpus = 0", "environment.cpus = 0: must be a finite number of CPUs"),
        ("environment", "cpus = -2", "environment.cpus = -2: must be a finite number of CPUs"),
        ("environment", "cpus = nan", "environment.cpus = nan: must be a finite number of CPUs"),
        ("environment", "memory_mb = 0", "environment.memory_mb = 0: Input should be greater"),
        ("environment", "storage_mb = -1", "environment.storage_mb = -1: Input should be greater"),
        ("environment", 'memory = "-2G"', "environment.memory_mb = -2048: Input should be"),
    ],
)
def test_a_budget_or_resource_that_is_not_a_positive_finite_number_is_refused_at_load(
    tmp_path: Path, table: str, line: str, field: str
) -> None:
    folder = make_task(tmp_path / "t", toml=f"[{table}]\n{line}\n")
    with pytest.raises(ConfigError) as raised:
        read_task(folder)
    text = str(raised.value)
    assert "\n" not in text and text.startswith(f"{folder / 'task.toml'}: {field}")


def _read_in_time(folder: Path, blocker: Path | None = None) -> BaseException | None:
    """``read_task(folder)`` in a thread: what it raised (None if nothing); if it has not
    returned in 20 s, the FIFO ``blocker`` is opened for writing to free it, and the test
    fails."""
    raised: list[BaseException | None] = []

    def read() -> None:
        try:
            read_task(folder)
            raised.append(None)
        except BaseException as error:  # handed to the test
            raised.append(error)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(20)
    if thread.is_alive():
        if blocker is not None:
            os.close(os.open(blocker, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(5)
        pytest.fail(f"reading {folder} hung")
    return raised[0]


@pytest.mark.parametrize(
    ("where", "kind"),
    [
        ("tests/pipe", "a FIFO (named pipe)"),
        ("environment/deep/er/pipe", "a FIFO (named pipe)"),
        ("solution/socket", "a socket"),
        ("tests/null", "a device node"),
    ],
)
def test_a_fifo_socket_or_device_in_a_task_folder_is_refused_without_opening_it(
    tmp_path: Path, where: str, kind: str
) -> None:
    folder = make_task(tmp_path / "t")
    path = folder / where
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind.startswith("a FIFO"):
        os.mkfifo(path)
    elif kind == "a socket":
        with socket.socket(socket.AF_UNIX) as bound:
            bound.bind(str(path))
    else:
        if os.geteuid() != 0:
            pytest.skip("making a device node needs root")
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    error = _read_in_time(folder, path if kind.startswith("a FIFO") else None)
    assert isinstance(error, ConfigError)
    assert str(error) == (
        f"{path}: {kind} in a task folder: refused (only files, directories and symlinks "
        f"are copied into a machine)"
    )


def test_a_task_folder_nested_past_the_limit_is_one_line_not_a_recursion_error(
    tmp_path: Path,
) -> None:
    folder = make_task(tmp_path / "t")
    deep = folder / "tests"
    descriptor = os.open(deep, os.O_RDONLY | os.O_DIRECTORY)
    try:  # 1,100 levels: made relative to each level (a whole path would pass PATH_MAX)
        for _ in range(1100):
            os.mkdir("d", dir_fd=descriptor)
            below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=descriptor)
            os.close(descriptor)
            descriptor = below
        os.close(os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=descriptor))
    finally:
        os.close(descriptor)
    try:
        error = _read_in_time(folder)
    finally:  # pytest's own clean-up recurses and would fail on it
        subprocess.run(["rm", "-rf", str(deep / "d")], check=True)
    assert isinstance(error, ConfigError)
    text = str(error)
    assert "\n" not in text and text.endswith(
        f"nested more than {MAX_DEPTH} directories deep in {folder}: refused"
    )
    shallow = make_task(tmp_path / "u")
    (shallow / "tests" / "/".join(["d"] * (MAX_DEPTH - 1))).mkdir(parents=True)
    assert read_task(shallow).digest.startswith("sha256:")  # at the limit: read

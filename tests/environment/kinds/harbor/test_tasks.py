"""Harbor folders as tasks: what task.toml says is honoured or refused, rows, digests, lookup."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import orjson
import pytest

from palaestra.environment.finding.registry import find_environment, tasks_beside
from palaestra.environment.kinds.harbor import HarborEnvironment
from palaestra.environment.kinds.harbor.tasks import (
    TASK_FIELD,
    box_spec,
    load_tasks,
    task_row,
    unpacked,
    write_rows,
)
from palaestra.errors import ConfigError, InvalidTask
from palaestra.sandbox.machines.provider import BoxSpec, Provider
from palaestra.sandbox.machines.registry import PROVIDERS
from palaestra.wire.harbor import folder_digest
from palaestra.wire.rows import PARAMS, TASK_DIGEST
from tests.support.harbor_folders import TASK_TOML, calculator_folders, components_task


@pytest.fixture(scope="module")
def calculator(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return calculator_folders(tmp_path_factory.mktemp("harbor") / "calc", tasks=3)


def test_calculator_export_loads_one_task_per_folder(calculator: Path) -> None:
    tasks = load_tasks(calculator)
    assert sorted(tasks) == ["calculator-0000", "calculator-0001", "calculator-0002"]
    for name, task in tasks.items():
        assert task.digest == folder_digest(calculator / name)
        row = task_row(name, task)
        assert row[TASK_FIELD] == name
        assert row[TASK_DIGEST] == {
            "path": str((calculator / name).resolve()),
            "digest": task.digest,
        }
        assert row[PARAMS]["input"] == [{"role": "user", "content": task.instruction}]


def test_one_folder_is_one_task(calculator: Path) -> None:
    assert list(load_tasks(calculator / "calculator-0001")) == ["calculator-0001"]


def test_resources_become_the_box_spec(tmp_path: Path, calculator: Path) -> None:
    spec = box_spec(load_tasks(calculator)["calculator-0000"])
    assert (spec.cpus, spec.memory_mb, spec.storage_mb, spec.network) == (1.0, 1024, 2048, False)
    bare = '[environment]\nnetwork_mode = "no-network"\n'
    task = load_tasks(components_task(tmp_path / "t", toml=bare))["t"]
    default = BoxSpec()
    assert (box_spec(task).cpus, box_spec(task).memory_mb) == (default.cpus, default.memory_mb)


@pytest.mark.parametrize(
    ("toml", "field"),
    [
        ("", "environment.network_mode = 'public' (Harbor's default)"),
        ("[environment]\nallow_internet = true\n", "environment.network_mode = 'public'"),
        (
            '[environment]\nnetwork_mode = "allowlist"\nallowed_hosts = ["https://pypi.org"]\n',
            "environment.allowed_hosts: ",
        ),
        (
            '[environment]\nnetwork_mode = "no-network"\n[agent]\nnetwork_mode = "public"\n',
            "agent.network_mode = 'public'",
        ),
        ('[environment]\nnetwork_mode = "no-network"\ngpus = 1\n', "environment.gpus"),
        ('[environment]\nnetwork_mode = "no-network"\nos = "windows"\n', "environment.os"),
        (
            '[environment]\nnetwork_mode = "no-network"\n[verifier.environment]\ncpus = 1\n',
            "verifier.environment.network_mode = 'public' (Harbor's default)",
        ),
        (
            '[environment]\nnetwork_mode = "no-network"\n'
            '[[verifier.collect]]\ncommand = "true"\nservice = "db"\n',
            "verifier.collect: service = 'db'",
        ),
        (
            'artifacts = ["/logs/verifier/x"]\n[environment]\nnetwork_mode = "no-network"\n',
            "artifacts: '/logs/verifier/x' overlaps /logs/verifier",
        ),
        (
            '[environment]\nnetwork_mode = "no-network"\nmcp_servers = [{name = "x"}]\n',
            "environment.mcp_servers",
        ),
    ],
)
def test_what_cannot_run_here_is_one_line_naming_the_task_and_field(
    tmp_path: Path, toml: str, field: str
) -> None:
    components_task(tmp_path / "tasks" / "a", toml=TASK_TOML)
    components_task(tmp_path / "tasks" / "b", toml=toml)
    with pytest.raises(ConfigError) as raised:
        load_tasks(tmp_path / "tasks")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{tmp_path / 'tasks' / 'b' / 'task.toml'}: {field}")


def test_every_refused_task_of_a_folder_is_named_one_line_each(tmp_path: Path) -> None:
    components_task(tmp_path / "tasks" / "a", toml=TASK_TOML)
    components_task(tmp_path / "tasks" / "b", toml="")
    components_task(tmp_path / "tasks" / "c", toml=TASK_TOML.replace("cpus = 1", "gpus = 1"))
    with pytest.raises(ConfigError) as raised:
        load_tasks(tmp_path / "tasks")
    lines = str(raised.value).splitlines()
    assert lines[0] == "2 of 3 task folders are refused:"
    assert lines[1].strip().startswith(f"{tmp_path / 'tasks' / 'b' / 'task.toml'}: environment.")
    assert (
        lines[2].strip().startswith(f"{tmp_path / 'tasks' / 'c' / 'task.toml'}: environment.gpus")
    )
    assert len(lines) == 3


def test_a_prebuilt_image_the_provider_cannot_have_is_refused_at_load_naming_it(
    tmp_path: Path,
) -> None:
    toml = TASK_TOML.replace(
        'network_mode = "no-network"', 'network_mode = "no-network"\ndocker_image = "ubuntu:24.04"'
    )
    components_task(tmp_path / "tasks" / "b", toml=toml)
    assert load_tasks(tmp_path / "tasks")["b"].config.environment.docker_image == "ubuntu:24.04"
    with pytest.raises(ConfigError) as raised:
        load_tasks(tmp_path / "tasks", "rootfs")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{tmp_path / 'tasks' / 'b'}: sandbox 'rootfs' cannot build it")
    assert "FROM ubuntu:24.04" in message


def test_rows_file_is_named_by_content(tmp_path: Path) -> None:
    folder = components_task(tmp_path / "tasks" / "a")
    first = write_rows(load_tasks(tmp_path / "tasks"), tmp_path / "rows")
    assert write_rows(load_tasks(tmp_path / "tasks"), tmp_path / "rows") == first
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    second = write_rows(load_tasks(tmp_path / "tasks"), tmp_path / "rows")
    assert second != first
    rows = [orjson.loads(line) for line in second.read_bytes().splitlines()]
    assert rows[0][TASK_DIGEST]["digest"] == folder_digest(folder)
    assert first.is_file()  # the earlier run's input stays


def test_env_spec_harbor_path_resolves(
    calculator: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    entry = find_environment(f"harbor:{calculator}")
    assert entry.environment is HarborEnvironment
    assert entry.args == {"path": str(calculator.resolve())}
    assert entry.example_tasks is not None
    assert entry.example_tasks.parent == tmp_path / "cache" / "palaestra" / "harbor"
    rows = [orjson.loads(line) for line in entry.example_tasks.read_bytes().splitlines()]
    assert [row[TASK_FIELD] for row in rows] == [
        "calculator-0000",
        "calculator-0001",
        "calculator-0002",
    ]


@pytest.mark.parametrize(
    ("spec", "said"),
    [("harbor:", "harbor: needs a path"), ("harbor:/nonexistent/x", "/nonexistent/x")],
)
def test_env_spec_harbor_mistakes_are_one_line(spec: str, said: str) -> None:
    with pytest.raises(ConfigError, match=said) as raised:
        find_environment(spec)
    assert "\n" not in str(raised.value)


def test_a_row_of_another_folder_state_is_refused(tmp_path: Path) -> None:
    folder = components_task(tmp_path / "tasks" / "a")
    environment = HarborEnvironment(str(tmp_path / "tasks"))
    row = task_row("a", load_tasks(folder)["a"])
    assert environment.task_of(row)[0] == "a"
    stale = {**row, TASK_DIGEST: {"path": str(folder), "digest": "sha256:00"}}
    with pytest.raises(InvalidTask, match="changed since this task row was made"):
        environment.task_of(stale)
    with pytest.raises(InvalidTask, match="no task folder 'b'"):
        environment.task_of({**row, TASK_FIELD: "b"})


def test_unknown_sandbox_is_refused(tmp_path: Path) -> None:
    components_task(tmp_path / "tasks" / "a")
    with pytest.raises(ConfigError, match="unknown sandbox 'lxc'"):
        HarborEnvironment(str(tmp_path / "tasks"), sandbox="lxc")


@pytest.mark.parametrize("sandbox", ["rootfs", "docker"])
def test_what_the_chosen_provider_cannot_build_is_refused_at_load_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox: str
) -> None:
    components_task(tmp_path / "tasks" / "a")
    components_task(tmp_path / "tasks" / "b")
    asked: list[Path] = []

    def refusal(cls: type[Provider], context: Path) -> str | None:
        asked.append(context)
        if context.parent.name == "b":
            return f"{context / 'Dockerfile'}:2: ONBUILD: not supported by {cls.name}"
        return None

    provider = PROVIDERS.load(sandbox).value
    monkeypatch.setattr(provider, "refusal", classmethod(refusal))
    with pytest.raises(ConfigError) as raised:
        HarborEnvironment(str(tmp_path / "tasks"), sandbox=sandbox)
    b = tmp_path / "tasks" / "b"
    assert str(raised.value) == (
        f"{b}: sandbox '{sandbox}' cannot build it: "
        f"{b / 'environment' / 'Dockerfile'}:2: ONBUILD: not supported by {sandbox}"
    )
    assert asked == [tmp_path / "tasks" / "a" / "environment", b / "environment"]
    assert load_tasks(tmp_path / "tasks").keys() == {"a", "b"}  # no provider named: not asked


def test_time_limits_follow_the_tasks(tmp_path: Path) -> None:
    slow = TASK_TOML.replace("timeout_sec = 30.0", "timeout_sec = 900.0")
    components_task(tmp_path / "tasks" / "a")
    components_task(tmp_path / "tasks" / "b", toml=slow)
    environment = HarborEnvironment(str(tmp_path / "tasks"))
    assert environment.verify_timeout > 900.0
    assert environment.seed_timeout > 600.0  # Harbor's default build_timeout_sec


def test_gold_actions_run_the_solution_and_null_is_required(tmp_path: Path) -> None:
    toml = TASK_TOML + '\n[solution]\nenv = { ANSWER = "o k" }\n'
    folder = components_task(tmp_path / "tasks" / "a", toml=toml)
    components_task(tmp_path / "tasks" / "b", solve_sh=None)
    environment = HarborEnvironment(str(tmp_path / "tasks"))
    tasks = load_tasks(tmp_path / "tasks")
    gold = environment.gold_actions(task_row("a", tasks["a"]))
    assert gold is not None and len(gold) == 1 and gold[0][0]["name"] == "bash"
    command = gold[0][0]["arguments"]["command"]
    assert command.splitlines()[-1] == "env ANSWER='o k' bash /solution/solve.sh"
    assert environment.gold_actions(task_row("b", tasks["b"])) is None
    assert environment.requires_action(task_row("a", tasks["a"])) is True
    assert folder.is_dir()


def test_a_subclass_shipping_folders_gives_them_as_its_example_tasks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    components_task(tmp_path / "shipped" / "a")

    class Shipped(HarborEnvironment):
        folder = tmp_path / "shipped"

    assert Shipped().tasks.keys() == {"a"}
    example = tasks_beside(Shipped)
    assert example is not None
    assert [orjson.loads(line)[TASK_FIELD] for line in example.read_bytes().splitlines()] == ["a"]
    with pytest.raises(ConfigError, match="needs the path of its task folders"):
        HarborEnvironment()


def _tar(folder: Path, archive: Path) -> Path:
    """``folder``'s content (not the folder itself) as a gzipped tar at ``archive``."""
    with tarfile.open(archive, "w:gz") as tar:
        for child in sorted(folder.iterdir()):
            tar.add(child, arcname=child.name)
    return archive


def test_an_archive_of_task_folders_loads_as_the_folders_it_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, calculator: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    archive = _tar(calculator, tmp_path / "calculator.tar.gz")
    tasks = load_tasks(archive)
    assert {name: task.digest for name, task in tasks.items()} == {
        name: folder_digest(calculator / name) for name in load_tasks(calculator)
    }
    home = unpacked(archive)
    assert home.parent == tmp_path / "cache" / "palaestra" / "harbor" / "unpacked"
    assert all(task.path.parent == home for task in tasks.values())
    (home / "calculator-0000" / "marker").write_text("kept")  # unpacked once, then reused
    assert unpacked(archive) == home and (home / "calculator-0000" / "marker").is_file()
    assert HarborEnvironment(str(archive)).path == home
    assert unpacked(calculator) == calculator  # a folder is itself
    assert [p.name for p in home.parent.iterdir()] == [home.name]  # no partial copy left


_UNPACK = """
import sys, time
from pathlib import Path
from palaestra.environment.kinds.harbor.tasks import unpacked
from palaestra.wire.harbor import folder_digest
archive, ready, go = map(Path, sys.argv[1:])
ready.touch()
while not go.exists():
    time.sleep(0.005)
home = unpacked(archive)
print(home, folder_digest(home))
"""


def test_processes_unpacking_one_archive_at_once_each_get_the_whole_folder(
    tmp_path: Path,
) -> None:
    """Each process reads the folder the moment ``unpacked`` returns: none sees a half."""
    source = tmp_path / "source"
    for task in range(30):
        folder = source / f"task-{task:02d}"
        folder.mkdir(parents=True)
        for index in range(30):
            (folder / f"file-{index:02d}").write_bytes(b"%d %d\n" % (task, index) * 100)
    archive = _tar(source, tmp_path / "set.tar.gz")
    go = tmp_path / "go"
    environment = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    ready = [tmp_path / f"ready-{number}" for number in range(3)]
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _UNPACK, str(archive), str(flag), str(go)],
            env=environment,
            stdout=subprocess.PIPE,
            text=True,
        )
        for flag in ready
    ]
    deadline = time.monotonic() + 120
    while not all(flag.exists() for flag in ready) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    answers = {process.communicate(timeout=120)[0].strip() for process in processes}
    assert all(process.returncode == 0 for process in processes)
    home = tmp_path / "cache" / "palaestra" / "harbor" / "unpacked"
    (only,) = home.iterdir()  # one folder, no partial copy left behind
    assert answers == {f"{only} {folder_digest(source)}"}


def test_an_archive_that_cannot_be_unpacked_is_one_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    escaping = tmp_path / "escaping.tar"
    with tarfile.open(escaping, "w") as tar:
        member = tarfile.TarInfo("../outside")
        member.size = 1
        tar.addfile(member, io.BytesIO(b"x"))
    truncated = tmp_path / "truncated.tar.gz"
    whole = _tar(components_task(tmp_path / "one" / "a").parent, tmp_path / "whole.tar.gz")
    truncated.write_bytes(whole.read_bytes()[:200])
    for archive in (escaping, truncated):
        with pytest.raises(ConfigError, match=f"^{archive}: cannot unpack it as task folders"):
            load_tasks(archive)
    assert not (tmp_path / "outside").exists()
    assert list((tmp_path / "cache" / "palaestra" / "harbor" / "unpacked").iterdir()) == []

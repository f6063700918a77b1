"""End to end on the rootfs provider: ``palaestra collect --env harbor:DIR`` with a scripted
model, ``palaestra test harbor:DIR`` (oracle 1, null 0, one line per task), a resume of the
run moved elsewhere, and one of a run whose task folder changed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from palaestra.cli import cli
from palaestra.types import JsonDict
from tests.environment.kinds.harbor.conftest import docker_or_skip
from tests.support.harbor_folders import calculator_folders, components_task
from tests.support.scripted_model import (
    Reply,
    ScriptedModelServer,
    text_response,
    tool_call_response,
)

pytestmark = pytest.mark.usefixtures("default_rootfs")


@pytest.fixture(params=["rootfs", "docker"])
def sandbox(request: pytest.FixtureRequest) -> str:
    """The provider's name for ``--env-arg sandbox=``; docker only where it can run."""
    if request.param == "docker":
        docker_or_skip()
    return str(request.param)


def answers(folder: Path) -> dict[str, str]:
    """Each calculator task's instruction -> its expected answer (from its hidden tests)."""
    found = {}
    for task in sorted(folder.iterdir()):
        row = json.loads((task / "tests" / "task.json").read_text())
        found[(task / "instruction.md").read_text()] = row["expected_answer"]
    return found


def agent(known: dict[str, str]):  # type: ignore[no-untyped-def]
    """A model that writes the answer with bash, then submits, then says it is done."""

    def script(params: JsonDict) -> Reply:
        items = params["input"]
        instruction = next(item["content"] for item in items if item.get("role") == "user")
        outputs = [item for item in items if item.get("type") == "function_call_output"]
        if not outputs:
            command = f"echo {known[instruction]} > /app/answer.txt && id -un && ls /tests"
            return tool_call_response("bash", orjson.dumps({"command": command}).decode())
        if len(outputs) == 1:
            return tool_call_response("submit", "{}", call_id="call_2")
        return text_response("Done.")

    return script


def rows(path: Path) -> list[JsonDict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_collect_runs_harbor_folders_and_a_resume_refuses_a_changed_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox: str
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = calculator_folders(tmp_path / "calc", tasks=2)
    output = tmp_path / "runs" / "calc.jsonl"
    command = ["collect", "--env", f"harbor:{folder}", "--output", str(output)]
    command += ["--env-arg", f"sandbox={sandbox}"]
    with ScriptedModelServer(agent(answers(folder))) as server:
        result = CliRunner().invoke(cli, [*command, "--model", server.url])
        assert result.exit_code == 0, result.output
        written = sorted(rows(output), key=lambda row: row["harbor_task"])
        assert [row["harbor_task"] for row in written] == ["calculator-0000", "calculator-0001"]
        for row in written:
            assert row["reward"] == 1.0
            assert row["reward_components"] == {"reward": 1.0}
            assert row["task_digest"]["path"] == str(folder / row["harbor_task"])
            tool_outputs = [
                item["output"]
                for item in row["response"]["output"]
                if item["type"] == "function_call_output"
            ]
            assert tool_outputs[0].startswith("agent\nls: cannot access '/tests'")
        # The project moved elsewhere (folders and run together): the same run, resumed.
        moved = tmp_path / "moved"
        moved.mkdir()
        shutil.copytree(folder, moved / "calc", symlinks=True)
        shutil.copytree(output.parent, moved / "runs")
        elsewhere = ["collect", "--env", f"harbor:{moved / 'calc'}", "--resume"]
        elsewhere += ["--output", str(moved / "runs" / "calc.jsonl"), "--env-arg"]
        elsewhere += [f"sandbox={sandbox}", "--model", server.url]
        continued = CliRunner().invoke(cli, elsewhere)
        assert continued.exit_code == 0, continued.output
        assert len(rows(moved / "runs" / "calc.jsonl")) == 2  # nothing left to run
        (folder / "calculator-0001" / "tests" / "test.sh").write_text("#!/bin/bash\nexit 1\n")
        resumed = CliRunner().invoke(cli, [*command, "--model", server.url, "--resume"])
    assert resumed.exit_code != 0
    said = [line for line in resumed.output.splitlines() if "cannot resume" in line]
    assert len(said) == 1, resumed.output
    assert f"the task folder {folder / 'calculator-0001'} changed since its rows" in said[0]


def test_palaestra_test_runs_the_oracle_and_the_null_run_per_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox: str
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = calculator_folders(tmp_path / "tasks", tasks=2)
    components_task(folder / "handmade")
    arguments = ["test", f"harbor:{folder}", "--no-model", "--env-arg", f"sandbox={sandbox}"]
    result = CliRunner().invoke(cli, arguments)
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.output.splitlines()]
    assert "PASS oracle: replaying the gold actions scores 1 on 3 tasks (3 calls)" in lines
    for index, name in enumerate(["calculator-0000", "calculator-0001", "handmade"]):
        assert f"ok   task {index} ({name}): the gold actions scored 1" in lines
        assert f"ok   task {index} ({name}): doing nothing scored 0" in lines


def test_palaestra_test_fails_a_task_that_rewards_doing_nothing_or_writes_no_reward(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    components_task(tmp_path / "tasks" / "good")
    lenient = "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n"
    components_task(tmp_path / "tasks" / "lenient", test_sh=lenient)
    components_task(tmp_path / "tasks" / "silent", test_sh="#!/bin/bash\nexit 0\n")
    result = CliRunner().invoke(cli, ["test", f"harbor:{tmp_path / 'tasks'}", "--no-model"])
    assert result.exit_code == 1, result.output
    lines = [line.strip() for line in result.output.splitlines()]
    assert "ok   task 0 (good): doing nothing scored 0" in lines
    assert "ok   task 1 (lenient): the gold actions scored 1" in lines
    assert any(
        line.startswith("FAIL task 1 (lenient): doing nothing scored 1, not 0") for line in lines
    )
    silent = (
        "FAIL task 2 (silent): {} was not verified (unverified: silent: the tests wrote no reward"
    )
    for what in ("the gold actions", "doing nothing"):
        assert any(line.startswith(silent.format(what)) for line in lines), result.output


NOTES = Path(__file__).parents[4] / "examples" / "harbor" / "notes"


def step_then_submit(params: JsonDict) -> Reply:
    """Each step of the notes task: its command, then ``submit``; then more if asked again."""
    items = params["input"]
    told = [item["content"] for item in items if item.get("role") == "user"]
    done = [item for item in items if item.get("type") == "function_call_output"]
    commands = ["echo hello > /app/notes.txt", "echo world >> /app/notes.txt"]
    if len(done) == 2 * len(told) - 2:
        command = orjson.dumps({"command": commands[len(told) - 1]}).decode()
        return tool_call_response("bash", command, call_id=f"bash{len(told)}")
    if len(done) == 2 * len(told) - 1:
        return tool_call_response("submit", "{}", call_id=f"submit{len(told)}")
    return tool_call_response("bash", '{"command": "echo more"}', call_id=f"more{len(done)}")


def test_submit_ends_each_step_of_a_multi_step_task_and_then_the_episode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    output = tmp_path / "notes.jsonl"
    with ScriptedModelServer(step_then_submit) as server:
        command = ["collect", "--env", f"harbor:{NOTES}", "--output", str(output)]
        result = CliRunner().invoke(cli, [*command, "--max-steps", "10", "--model", server.url])
        asked = len(server.bodies("/v1/responses"))
    assert result.exit_code == 0, result.output
    (row,) = rows(output)
    assert asked == 4, "two steps, each a command and a submit; nothing after the last"
    assert row["reward"] == 1.0 and row["steps_run"] == 2, row
    assert row.get("truncated") is None

"""``palaestra verify``: stored rollouts scored again, offline, with tool replay."""

from __future__ import annotations

from pathlib import Path

import orjson

from palaestra.types import JsonDict
from tests.cli.test_collect_cli import rows, run_cli
from tests.support.scripted_model import ScriptedModelServer, text_response, tool_call_response


def counter_script(params: JsonDict) -> JsonDict:
    """Increments by the first number in the user's message, once, then stops."""
    items = params["input"]
    if any(i.get("type") == "function_call_output" for i in items):
        return text_response("done")
    user = next(i for i in items if i.get("role") == "user")["content"]
    numbers = [int(w.strip(".,")) for w in user.split() if w.strip(".,").isdigit()]
    amount = numbers[0] if numbers else 1
    return tool_call_response("increment", orjson.dumps({"amount": amount}).decode())


def collect_counter(tmp_path: Path) -> Path:
    with ScriptedModelServer(counter_script) as server:
        done = run_cli(
            "collect",
            "--env",
            "counter",
            "--output",
            "c.jsonl",
            "--model",
            server.url,
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    return tmp_path / "c.jsonl"


def test_reverify_replays_tools_and_reports_changes(tmp_path: Path) -> None:
    rollouts = collect_counter(tmp_path)
    stored = rows(rollouts)
    assert sum(r["reward"] for r in stored) >= 2  # tasks whose first number is the target

    same = run_cli(
        "verify", str(rollouts), "--env", "counter", "--output", "again.jsonl", cwd=tmp_path
    )
    assert same.returncode == 0, same.stderr
    assert "5 unchanged, 0 changed" in same.stdout
    again = rows(tmp_path / "again.jsonl")
    assert [r["reward"] for r in again] == [r["reward"] for r in stored]
    assert all(r["previous_reward"] == r["reward"] for r in again)

    tampered = [{**r, "reward": 1.0 - r["reward"]} if i == 0 else r for i, r in enumerate(stored)]
    rollouts.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in tampered))
    changed = run_cli("verify", str(rollouts), "--env", "counter", cwd=tmp_path)
    assert "4 unchanged, 1 changed" in changed.stdout

    no_replay = run_cli(
        "verify", str(rollouts), "--env", "counter", "--no-replay-tools", cwd=tmp_path
    )
    assert "0 changed" not in no_replay.stdout  # without replay the counters stay at start


def test_bad_rollout_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "r.jsonl").write_text('{"reward": 1}\n')
    done = run_cli("verify", "r.jsonl", "--env", "counter", cwd=tmp_path)
    assert done.returncode == 1
    assert "r.jsonl:1: field 'response'" in done.stderr and "Traceback" not in done.stderr


def test_a_torn_last_line_is_warned_about_and_the_complete_lines_are_verified(
    tmp_path: Path,
) -> None:
    rollouts = collect_counter(tmp_path)
    complete = rollouts.read_bytes()
    rollouts.write_bytes(complete + complete.splitlines(keepends=True)[0][:40])  # a killed write
    done = run_cli("verify", str(rollouts), "--env", "counter", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "c.jsonl:6: the last line is incomplete" in done.stderr
    assert "5 unchanged, 0 changed" in done.stdout

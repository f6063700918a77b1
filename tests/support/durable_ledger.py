"""A stateful multi-turn environment whose tool has a side effect outside the process.

``deposit`` adds to the rollout's balance and appends one line to an external ledger file (the
task's ``ledger``): ``{"task", "rollout", "seq", "key", "amount", "pid"}``. A deposit that ran twice
for one rollout shows as two lines with the same (task, rollout, seq), so a test reads the
ledger to count repeated side effects. ``ScriptedLedgerModel`` (below) is the policy: it
deposits 1, 2, ... ``turns`` one per turn, then answers.

``RestartingLedger`` cannot restore: a stopped collection restarts its rollouts (its ledger
then shows the deposits of the lost attempt again). ``DurableLedger`` exports and restores its
state; its deposit is idempotent by a key held in the state (the rollout's id, chosen in
``seed``, and the deposit's sequence number), as ``Environment.restore_state`` asks of an
effect outside the state: a deposit of the turn in progress at a kill, redone after the resume,
is not appended again but counted in ``<ledger>.suppressed``. ``SlowFirstDeposit`` lingers in
its first deposit, so a kill can land inside the first turn.

Loaded by path (``--env <this file>:DurableLedger``), so it imports only palaestra.
"""

from __future__ import annotations

import fcntl
import os
import time
import uuid
from pathlib import Path
from typing import Any

import orjson

from palaestra import Environment, Session, Verdict, tool
from palaestra.types import JsonDict


def append_line(path: Path, row: JsonDict) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, orjson.dumps(row) + b"\n")
    finally:
        os.close(fd)


def ledger_lines(path: Path) -> list[JsonDict]:
    if not path.exists():
        return []
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


class RestartingLedger(Environment):
    """Deposits recorded in an external ledger; no state export: rollouts restart."""

    tool_timeout = 30.0

    def seed(self, task: JsonDict) -> Any:
        return {
            "id": uuid.uuid4().hex,
            "seq": 0,
            "balance": 0,
            "task": task["_ng_task_index"],
            "rollout": task["_ng_rollout_index"],
            "ledger": task["ledger"],
        }

    @tool
    def deposit(self, amount: int, session: Session) -> str:
        """Deposit an amount.

        Args:
            amount: How much to deposit.
        """
        state = session.state
        self.record(state, amount)
        state["seq"] += 1
        state["balance"] += amount
        return f"balance {state['balance']}"

    def record(self, state: JsonDict, amount: int) -> None:
        append_line(Path(state["ledger"]), self.line(state, amount))

    @staticmethod
    def line(state: JsonDict, amount: int) -> JsonDict:
        return {
            "task": state["task"],
            "rollout": state["rollout"],
            "seq": state["seq"],
            "key": f"{state['id']}:{state['seq']}",
            "amount": amount,
            "pid": os.getpid(),
        }

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        turns = int(session.task["turns"])
        expected = turns * (turns + 1) // 2
        balance = session.state["balance"]
        return Verdict(reward=float(balance == expected), metrics={"balance": balance})


class DurableLedger(RestartingLedger):
    """The ledger, restorable: exported state, and deposits idempotent by key."""

    def export_state(self, session: Session) -> JsonDict:
        return dict(session.state)

    def restore_state(self, task: JsonDict, state: JsonDict) -> Any:
        return dict(state)

    def record(self, state: JsonDict, amount: int) -> None:
        path = Path(state["ledger"])
        line = self.line(state, amount)
        with path.with_name(path.name + ".lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if any(row["key"] == line["key"] for row in ledger_lines(path)):
                append_line(path.with_name(path.name + ".suppressed"), line)
                return
            append_line(path, line)


class SlowFirstDeposit(DurableLedger):
    """The restorable ledger whose first deposit lingers ``LINGER`` seconds after its line is
    written: a collection killed then is killed during the first turn, its effect done."""

    LINGER = 3.0

    def record(self, state: JsonDict, amount: int) -> None:
        super().record(state, amount)
        if state["seq"] == 0:
            time.sleep(self.LINGER)


def ledger_script(delay: float = 0.0):  # type: ignore[no-untyped-def]
    """The policy: deposit ``1..turns`` (the task's ``turns``, read from its first message),
    one per turn, then say it is done; each answer after ``delay`` seconds."""
    from tests.support.scripted_model import ScriptedFault, text_response, tool_call_response

    def script(params: JsonDict) -> Any:
        prompt = params.get("prompt")
        if isinstance(prompt, str) and prompt:  # token-in mode: the rendered conversation
            done = prompt.count("<|im_start|>tool\n")
            turns = int(prompt.split("Deposit 1 up to ", 1)[1].split("<", 1)[0])
        else:
            items = params["input"] if isinstance(params["input"], list) else []
            done = sum(1 for item in items if item.get("type") == "function_call_output")
            first = next(item for item in items if item.get("role") == "user")
            text = first["content"] if isinstance(first["content"], str) else ""
            turns = int(text.split()[-1])
        if done < turns:
            arguments = orjson.dumps({"amount": done + 1}).decode()
            reply = tool_call_response("deposit", arguments, call_id=f"call_{done}")
        else:
            reply = text_response("All deposited.")
        return ScriptedFault(status=200, body=reply, delay=delay) if delay else reply

    return script


def ledger_tasks(path: Path, ledger: Path, count: int, turns: int) -> Path:
    """``count`` tasks of ``turns`` deposits each, recorded in ``ledger``."""
    rows = [
        {
            "responses_create_params": {
                "input": [{"role": "user", "content": f"Deposit 1 up to {turns}"}]
            },
            "ledger": str(ledger),
            "turns": turns,
        }
        for _ in range(count)
    ]
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path

"""Durable multi-turn rollouts: resumed vs restarted after ``kill -9``, and the cost when none.

1. **After kill -9.** A real ``palaestra collect`` of a stateful multi-turn environment
   (``tests/support/durable_ledger.py``: each turn a deposit appended to an external ledger
   file) against ``tests/support``'s scripted OpenAI-compatible server, answering each call
   after ``--delay`` s, is killed with SIGKILL once the rollouts have made ``--kill-after``
   deposits on average (mid-episode), then run again with ``--resume``. For the restorable
   ``DurableLedger`` and for ``RestartingLedger`` (the same without ``export_state`` /
   ``restore_state``) it counts the rollouts resumed from their last completed turn and those
   restarted, the deposits made twice (the ledger holds one line per deposit made: the same
   (task, seq) twice is a repeated side effect; target 0), and the redone deposits the
   idempotency key suppressed (a kill between a deposit and its checkpoint: the turn in
   progress is redone).
2. **Cost when nothing goes wrong.** ``collect`` in process, over HTTP to the scripted server
   answering at once, of a six-turn counter environment whose tools are ``async`` (they run on
   the loop, so the collector's thread does all the library's work): the environment as is
   (no restore: the collector lends each rollout a ``Durability``, the agent tests one
   attribute), the same environment restorable (a checkpoint after every turn: its state
   exported, the trajectory encoded and appended, one ``write`` each), and, as the baseline,
   the non-restorable one with the durability machinery switched off in the benchmark process.
   CPU of the collector's thread (``time.thread_time``: the server's thread is not counted),
   per rollout, alternating rounds, medians. Target: within 2%.

3. **Instructions** (``--instructions``, valgrind's callgrind): the same six-turn rollout,
   restorable, with the runner checkpointing it and with ``durable = False``, 100 and 500
   rollouts each, differenced: instructions per rollout of the event loop's thread, which do
   not move with the machine's load as CPU time does. Prints its table only.

Run: ``python benchmarks/durable.py [--tasks 32] [--rounds 5] [--n 1000]``; writes
``benchmarks/results/durable.md``. ``PYTHONPATH=. python benchmarks/durable.py
--instructions`` prints the third part.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import orjson

from palaestra import Environment, LocalEnvironmentClient, Session, ToolCallingAgent, tool
from palaestra.agents import BoundAgent
from palaestra.collection import collector as collector_module
from palaestra.collection.collector import CollectConfig, RunSummary, collect
from palaestra.types import JsonDict
from tests.support import durable_ledger
from tests.support.durable_ledger import ledger_lines, ledger_script, ledger_tasks
from tests.support.scripted_model import ScriptedModelServer, text_response, tool_call_response

RESULTS = Path(__file__).resolve().parent / "results" / "durable.md"
TURNS = 6


# --- 1. kill -9, then --resume ----------------------------------------------------------------


def rows(path: Path) -> list[JsonDict]:
    if not path.exists():
        return []
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def killed_and_resumed(env_class: str, tasks: int, delay: float, kill_after: float) -> JsonDict:
    """One collection killed mid-episode and resumed; what the kill cost."""
    with tempfile.TemporaryDirectory() as directory:
        where = Path(directory)
        ledger = where / "ledger.jsonl"
        tasks_path = ledger_tasks(where / "tasks.jsonl", ledger, tasks, TURNS)
        output = where / "run.jsonl"
        args = [sys.executable, "-m", "palaestra", "collect"]
        args += ["--env", f"{durable_ledger.__file__}:{env_class}", "--input", str(tasks_path)]
        args += ["--output", str(output), "--concurrency", str(tasks), "--max-steps", "20"]
        with ScriptedModelServer(ledger_script(delay=delay)) as server:
            args += ["--model", server.url]
            process = subprocess.Popen(
                args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=where
            )
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if len(ledger_lines(ledger)) >= kill_after * tasks:
                    break
                time.sleep(0.01)
            # Not at once: the deposits just made would put the kill in the instant between a
            # deposit and its checkpoint far more often than a kill at a random time does.
            time.sleep(random.Random(kill_after).uniform(0, delay))
            os.kill(process.pid, signal.SIGKILL)
            process.wait(30)
            made = len(ledger_lines(ledger))
            finished_before = len(rows(output))
            checkpoints = where / "run_checkpoints.jsonl"
            checkpoint_bytes = checkpoints.stat().st_size if checkpoints.exists() else 0
            resumed = subprocess.run(
                [*args, "--resume"], capture_output=True, text=True, cwd=where, timeout=300
            )
        assert resumed.returncode == 0, resumed.stderr
        written = rows(output)
        assert len(written) == tasks and all(row["reward"] == 1.0 for row in written)
        lines = ledger_lines(ledger)
        repeated = sum(n - 1 for n in Counter((r["task"], r["seq"]) for r in lines).values())
        suppressed_path = ledger.with_name(ledger.name + ".suppressed")
        suppressed = len(ledger_lines(suppressed_path))
        in_flight = tasks - finished_before
        continued = sum(1 for row in written if "resumed" in row["_palaestra"])
        return {
            "env": env_class,
            "deposits_at_kill": made,
            "in_flight": in_flight,
            "resumed": continued,
            "restarted": in_flight - continued,
            "repeated": repeated,
            "suppressed": suppressed,
            "checkpoint_kb": checkpoint_bytes / 1024,
        }


# --- 2. the cost when nothing goes wrong -----------------------------------------------------


class Counter6(Environment):
    """Count to six with a tool, one call per turn; nothing to restore."""

    def seed(self, task: JsonDict) -> Any:
        return {"count": 0, "log": []}

    @tool
    async def bump(self, by: int, session: Session) -> str:
        """Add to the count.

        Args:
            by: How much to add.
        """
        session.state["count"] += by
        session.state["log"].append(by)
        return f"count {session.state['count']}"

    async def verify(self, session: Session, response: JsonDict) -> float:
        return float(session.state["count"] == TURNS)


class RestorableCounter6(Counter6):
    """The same, exporting and restoring its state: checkpointed after every turn."""

    async def export_state(self, session: Session) -> JsonDict:
        state: JsonDict = session.state
        return {"count": state["count"], "log": list(state["log"])}

    async def restore_state(self, task: JsonDict, state: JsonDict) -> Any:
        return {"count": state["count"], "log": list(state["log"])}


def counter_script(params: JsonDict) -> JsonDict:
    items = params["input"] if isinstance(params["input"], list) else []
    done = sum(1 for item in items if item.get("type") == "function_call_output")
    if done < TURNS:
        return tool_call_response("bump", '{"by": 1}', call_id=f"call_{done}")
    return text_response("Counted.")


class Quiet:
    def start(self, summary: RunSummary) -> None: ...
    def update(self, summary: RunSummary) -> None: ...
    def message(self, text: str) -> None: ...
    def stop(self) -> None: ...


_LOG = collector_module.CheckpointLog
_SHIPPED = {name: getattr(_LOG, name) for name in ("begin", "current", "end", "release")}


def machinery(on: bool) -> None:
    """The collector lending durability (as shipped), or as good as not at all (the
    baseline: a shared ``Durability``, nothing numbered, saved or fenced)."""
    from palaestra.agents.durable import Durability

    idle = Durability(save=lambda checkpoint: True)
    off = {
        "begin": lambda self, pair: idle,
        "current": lambda self, pair, epoch: True,
        "end": lambda self, pair, epoch: None,
        "release": lambda self, pair, epoch: None,
    }
    for name, shipped in _SHIPPED.items():
        setattr(_LOG, name, shipped if on else off[name])


async def client_cpu(
    server: ScriptedModelServer, env: Environment, n: int, on: bool
) -> tuple[float, float]:
    """Collector-thread CPU seconds per rollout of ``n`` rollouts, and the seconds per rollout
    its rows say the agent spent checkpointing (``_palaestra.timings.checkpoint``: exporting
    the state, building, encoding and handing over each checkpoint, on the loop)."""
    from palaestra.models import ModelConfig, build_model

    machinery(on)
    try:
        with tempfile.TemporaryDirectory() as directory:
            where = Path(directory)
            tasks = where / "tasks.jsonl"
            row = {"responses_create_params": {"input": "count"}}
            tasks.write_bytes(b"".join(orjson.dumps(row) + b"\n" for _ in range(n)))
            client = LocalEnvironmentClient(env)
            model = build_model(ModelConfig(url=server.url, model="scripted-model"))
            runner = BoundAgent(ToolCallingAgent(max_steps=20), client, model)
            try:
                warm = CollectConfig(tasks, where / "warm.jsonl", concurrency=32, limit=64)
                await collect(runner, warm, Quiet())
                config = CollectConfig(tasks, where / "out.jsonl", concurrency=32)
                started = time.thread_time()
                summary = await collect(runner, config, Quiet())
                spent = time.thread_time() - started
            finally:
                await model.aclose()
                await client.aclose()
            assert summary.done == n and summary.failed == 0, summary.reasons
            checkpointing = sum(
                row["_palaestra"]["timings"].get("checkpoint", 0.0)
                for row in rows(where / "out.jsonl")
            )
        return spent / n, checkpointing / n
    finally:
        machinery(True)


def micro() -> list[tuple[str, float]]:
    """Microseconds per rollout (or per turn) of each piece, in process."""
    import timeit

    from palaestra.agents.context import RolloutContext
    from palaestra.agents.durable import Durability, checkpoint_of, encoded_checkpoint
    from palaestra.collection.checkpoints import CheckpointLog
    from palaestra.collection.files import encode
    from palaestra.types import AgentResult

    def best(statement: Any, number: int = 20_000) -> float:
        return min(timeit.repeat(statement, number=number, repeat=5)) / number * 1e6

    with tempfile.TemporaryDirectory() as directory:
        log = CheckpointLog(Path(directory) / "c.jsonl")
        pairs = iter(range(10**9))

        def lend() -> None:  # what every rollout pays, restorable or not
            pair = (next(pairs), 0)
            durability = log.begin(pair)
            RolloutContext(durability)
            log.current(pair, durability.attempt)
            log.end(pair, durability.attempt)

        result = AgentResult(model_calls=3, tool_calls=3, producers=["policy", "tool"] * 3)
        output = [counter_script({"input": []})["output"][0], {"type": "function_call_output"}]
        result.response = {"id": "r", "output": output * 3, "usage": {"input_tokens": 9}}
        durability = log.begin((-1, 0))

        def save() -> None:  # what a restorable rollout pays per turn (its state aside)
            state = {"count": 3, "log": [1, 1, 1]}
            durability.save(encoded_checkpoint(durability, result, state, None))

        line = b"x" * 700 + b"\n"
        fd = os.open(Path(directory) / "w.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND)

        def write() -> None:
            os.write(fd, line)

        # A token-exact trajectory: 20 calls, each carrying its 2,000 prompt token ids.
        tokens = AgentResult(model_calls=20, tool_calls=20, producers=["policy", "tool"] * 20)
        heavy: list[JsonDict] = []
        for call in range(20):
            heavy.append({"type": "function_call", "call_id": f"c{call}", "name": "bump",
                          "arguments": '{"by": 1}', "prompt_token_ids": list(range(2000)),
                          "generation_token_ids": list(range(50))})  # fmt: skip
            heavy.append({"type": "function_call_output", "call_id": f"c{call}", "output": "1"})
        tokens.response = {"id": "r", "output": heavy, "usage": {"input_tokens": 40000}}
        cached = Durability(save=lambda checkpoint: True)

        def whole() -> None:
            encode(checkpoint_of(tokens, {}))

        def once() -> None:  # the last turn's checkpoint: its two items, not the 38 before
            cached.sent = len(heavy) - 2
            encoded_checkpoint(cached, tokens, {}, None)

        figures = [
            ("every rollout: a Durability lent, its record fenced", best(lend)),
            ("a restorable rollout, per turn: checkpoint built, encoded, written", best(save)),
            ("of which the write alone (one `os.write` of a 0.7 KB line)", best(write)),
            (
                "a 20-call token trajectory (2,000 prompt ids a call), per turn: encoded whole",
                best(whole, 500),
            ),
            ("the same, as shipped: the turn's two items only", best(once, 500)),
        ]
        log.close()
        os.close(fd)
    return figures


# --- 3. instructions: checkpointed vs durable=False, side by side ----------------------------

COUNTED = (100, 500)
"""The two sizes counted: their difference over the rollouts between them is the work per
rollout, start-up, imports and the warm-up differenced out."""


async def counted_run(on: bool, n: int) -> None:
    """What is counted: 64 warm-up rollouts, then ``n``, of ``RestorableCounter6`` in process
    over HTTP to the scripted server at concurrency 32, checkpointed (``on``) or with the
    runner saying ``durable = False`` (the same environment, nothing checkpointed)."""
    from palaestra.models import ModelConfig, build_model

    with ScriptedModelServer(counter_script) as server, tempfile.TemporaryDirectory() as where:
        tasks = Path(where) / "tasks.jsonl"
        row = {"responses_create_params": {"input": "count"}}
        tasks.write_bytes(b"".join(orjson.dumps(row) + b"\n" for _ in range(n + 64)))
        client = LocalEnvironmentClient(RestorableCounter6())
        model = build_model(ModelConfig(url=server.url, model="scripted-model"))
        runner = BoundAgent(ToolCallingAgent(max_steps=20), client, model)
        runner.durable = on
        try:
            for name, limit in (("warm", 64), ("out", n)):
                out = Path(where) / f"{name}.jsonl"
                config = CollectConfig(tasks, out, concurrency=32, limit=limit)
                summary = await collect(runner, config, Quiet())
                assert summary.done == limit and summary.failed == 0, summary.reasons
                with out.open("rb") as written:  # one row: reading them all would be counted
                    timings = orjson.loads(written.readline())["_palaestra"]["timings"]
                assert ("checkpoint" in timings) == on
        finally:
            await model.aclose()
            await client.aclose()


def instructions() -> list[str]:
    """Instructions per rollout in the main thread (the event loop, where the collector, the
    agent and the environment run; the scripted server's threads are not counted), callgrind
    (``apt-get install valgrind``), checkpointed and not, and the difference."""
    import re

    per_rollout: dict[bool, float] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for on in (False, True):
            counts = []
            for n in COUNTED:
                out = Path(scratch) / f"cg-{on}-{n}.out"
                command = ["valgrind", "--tool=callgrind", "--separate-threads=yes"]
                command += [f"--callgrind-out-file={out}", sys.executable, __file__]
                command += ["--count", "on" if on else "off", str(n)]
                done = subprocess.run(command, capture_output=True, text=True)
                main_thread = Path(f"{out}-01")
                found = re.search(
                    rb"^(?:totals|summary): (\d+)",
                    main_thread.read_bytes() if main_thread.exists() else b"",
                    re.MULTILINE,
                )
                if done.returncode != 0 or found is None:
                    raise SystemExit(f"callgrind printed no count:\n{done.stderr[-1500:]}")
                counts.append(int(found.group(1)))
            per_rollout[on] = (counts[1] - counts[0]) / (COUNTED[1] - COUNTED[0])
            print(f"durable={on}: {per_rollout[on]:,.0f} instructions per rollout", flush=True)
    off, on_ = per_rollout[False], per_rollout[True]
    return [
        "| collector (RestorableCounter6, 6 turns) | instructions/rollout, main thread |",
        "|---|---:|",
        f"| `durable=False`: nothing checkpointed (the baseline) | {off:,.0f} |",
        f"| checkpointed: 7 checkpoints (the seeded state, then each turn) | {on_:,.0f} |",
        "",
        f"Checkpointing costs {on_ - off:,.0f} instructions per rollout, "
        f"{(on_ - off) / off * 100:.1f}% of the rollout (target: 2%).",
    ]


# --- the report -------------------------------------------------------------------------------


async def cost(args: argparse.Namespace) -> list[str]:
    lines: list[str] = []
    rounds: dict[str, list[float]] = {"baseline": [], "plain": [], "restorable": []}
    checkpointing: list[float] = []
    with ScriptedModelServer(counter_script) as server:
        for _ in range(args.rounds):
            rounds["baseline"].append((await client_cpu(server, Counter6(), args.n, False))[0])
            rounds["plain"].append((await client_cpu(server, Counter6(), args.n, True))[0])
            spent, saving = await client_cpu(server, RestorableCounter6(), args.n, True)
            rounds["restorable"].append(spent)
            checkpointing.append(saving)
    medians = {key: statistics.median(values) for key, values in rounds.items()}
    names = {
        "baseline": "not restorable, durability switched off (the baseline)",
        "plain": "not restorable, as shipped (restarts after a kill)",
        "restorable": "restorable, as shipped (a checkpoint after each of its 6 turns)",
    }
    lines += [
        "| collector | CPU ms/rollout (median) | vs baseline | rounds |",
        "|---|---:|---:|---|",
    ]
    for key, values in rounds.items():
        change = (medians[key] / medians["baseline"] - 1) * 100
        shown = ", ".join(f"{value * 1e3:.3f}" for value in values)
        lines.append(f"| {names[key]} | {medians[key] * 1e3:.3f} | {change:+.1f}% | {shown} |")
    saving = statistics.median(checkpointing)
    lines += [
        "",
        f"In the restorable rounds the rows' own `checkpoint` timing (exporting the state, "
        f"building, encoding and handing over each of the {TURNS} checkpoints) is "
        f"{saving * 1e6:.1f} µs per rollout (median; rounds: "
        f"{', '.join(f'{value * 1e6:.1f}' for value in checkpointing)}): "
        f"{saving / medians['baseline'] * 100:.1f}% of the baseline's CPU per rollout, plus the "
        "coalesced writes (at most one per checkpoint, below). The end-to-end medians move by "
        "more than that between rounds on this shared machine; this figure is the firmer one.",
    ]
    figures = micro()
    lines += ["", "In process (`timeit`, best of 5):", "", "| piece | µs |", "|---|---:|"]
    lines += [f"| {name} | {value:.2f} |" for name, value in figures]
    per_rollout = figures[0][1] + TURNS * figures[1][1]  # writes uncoalesced: an upper bound
    lines += [
        "",
        f"A restorable rollout of {TURNS} turns pays {per_rollout:.1f} µs for durability "
        f"({per_rollout / (medians['baseline'] * 1e6) * 100:.1f}% of the baseline's "
        f"{medians['baseline'] * 1e3:.3f} ms per rollout), its environment's export_state "
        f"aside; one that is not restorable pays {figures[0][1]:.2f} µs "
        f"({figures[0][1] / (medians['baseline'] * 1e6) * 100:.2f}%).",
    ]
    return lines


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=32)
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="only count instructions per rollout, checkpointed vs durable=False (callgrind)",
    )
    parser.add_argument("--count", nargs=2, metavar=("on|off", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.count:
        await counted_run(args.count[0] == "on", int(args.count[1]))
        return
    if args.instructions:
        print("\n".join(instructions()))
        return
    lines = [
        "# Durable multi-turn rollouts (benchmarks/durable.py)",
        "",
        f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}: `python "
        f"benchmarks/durable.py --tasks {args.tasks} --kills {args.kills} --delay {args.delay} "
        f"--rounds {args.rounds} --n {args.n}`.",
        "",
        "## Resumed vs restarted after kill -9",
        "",
        f"{args.tasks} rollouts of {TURNS} turns each (a deposit in an external ledger per "
        f"turn), all in flight, the model answering after {args.delay} s; `palaestra collect` "
        "SIGKILLed once the rollouts had made on average the deposits below, then run again "
        "with `--resume`. *Repeated*: deposits the ledger holds twice for one rollout and "
        "sequence number. *Suppressed*: redone deposits of the turn in progress at the kill "
        "that the environment's idempotency key turned away (its state did not have them yet).",
        "",
        "| environment | kill after (deposits/rollout) | deposits made | in flight | resumed "
        "| restarted | repeated | suppressed | checkpoints file at kill |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    totals: Counter[str] = Counter()
    for kill in range(args.kills):
        kill_after = 1.5 + kill * (TURNS - 2.5) / max(1, args.kills - 1)
        for env_class in ("DurableLedger", "RestartingLedger"):
            got = killed_and_resumed(env_class, args.tasks, args.delay, kill_after)
            totals[f"{env_class} repeated"] += got["repeated"]
            totals[f"{env_class} resumed"] += got["resumed"]
            totals[f"{env_class} restarted"] += got["restarted"]
            lines.append(
                f"| {env_class} | {kill_after:.1f} | {got['deposits_at_kill']} | "
                f"{got['in_flight']} | {got['resumed']} | {got['restarted']} | "
                f"{got['repeated']} | {got['suppressed']} | {got['checkpoint_kb']:.0f} KB |"
            )
            print(lines[-1], flush=True)
    lines += [
        "",
        f"Restorable: {totals['DurableLedger resumed']} rollouts resumed, "
        f"{totals['DurableLedger restarted']} restarted, "
        f"{totals['DurableLedger repeated']} side effects repeated (target 0). Not restorable: "
        f"{totals['RestartingLedger restarted']} restarted, "
        f"{totals['RestartingLedger repeated']} side effects repeated.",
        "",
        "## Cost per rollout when nothing goes wrong",
        "",
        f"{args.n} rollouts of {TURNS} turns per round at concurrency 32, in process, over HTTP "
        f"to the scripted server answering at once, {args.rounds} alternating rounds; CPU of "
        "the collector's thread (`time.thread_time`), per rollout, medians.",
        "",
    ]
    lines += await cost(args)
    RESULTS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    asyncio.run(main())

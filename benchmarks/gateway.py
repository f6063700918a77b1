"""The gateway's own CPU per model call, beside a direct call, at any history length.

Three figures, each for conversations of several lengths (``turns``: a harness sends its whole
history on every call):

- the handler alone (default): the gateway's request handler (``GatewayApp.answer``: parse,
  authenticate, convert, find the parent call, record, answer) in process against an instant
  model, the model call alone subtracted, HTTP parsing not included. ``continued`` is the
  call a harness makes at that length after the calls before it (what almost every call is);
  ``first`` is a rollout's first call carrying that much history (nothing to reuse: a new
  branch that shares nothing costs the same); ``repeat`` sends the same history again (a
  retry);
- ``--http``: the same, HTTP included: a real client (palaestra's HTTP client) -> the gateway
  (its model an ``OpenAIChatModel``) -> an instant Chat Completions server, against the same
  client -> the same server directly, all on one event loop (uvloop, as ``palaestra serve
  gateway`` runs) in this process; the difference of the process' CPU for the harness' call
  at that length, the calls before it made first (a conversation as a harness makes it);
- ``--instructions``: both as CPU instructions under valgrind (callgrind), which do not move
  with the machine's load, Python's garbage collector off. Through HTTP only the measured
  calls are counted (``Measured``: needs ``cc`` and valgrind's headers); the handler alone as
  the difference of two runs that differ by the measured calls (at long histories two whole
  runs differ by more than a call costs: use ``--http`` there).

``--parts`` counts, alone, what grows with the history in a call through HTTP: parsing the
request, encoding its messages, comparing them with the last call's.

    python benchmarks/gateway.py [--http] [--instructions] [--parts] [--jobs N]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import gc
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import mock_model  # noqa: E402  (beside this file)

from palaestra._util.loop import run_on_fast_loop  # noqa: E402
from palaestra.gateway import Gateway  # noqa: E402
from palaestra.gateway.app import GatewayApp  # noqa: E402
from palaestra.models.base import ModelStats  # noqa: E402
from palaestra.types import JsonDict, assistant_message  # noqa: E402

REPLY = "It is sunny in Paris today."
REGIONS = "GATEWAY_BENCH_CALLGRIND_REGIONS"
"""Names a helper library; set, callgrind counts only inside ``measured`` blocks."""
_REGIONS_C = b"""#include <valgrind/callgrind.h>
void measure_on(void) { CALLGRIND_START_INSTRUMENTATION; CALLGRIND_TOGGLE_COLLECT; }
void measure_off(void) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_STOP_INSTRUMENTATION; }
"""
TURNS = (1, 5, 10, 25, 50, 100)
KINDS = ("continued", "first", "repeat")
CHAT_ANSWER = orjson.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "instant",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": REPLY},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 7, "total_tokens": 17},
    }
)


class InstantModel:
    name = "instant"

    def __init__(self) -> None:
        self.stats = ModelStats()

    async def respond(self, params: JsonDict) -> JsonDict:
        return {"id": "resp_1", "object": "response", "status": "completed",
                "output": [assistant_message(REPLY)], "usage": {}}  # fmt: skip

    async def check(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


class InstantChat(mock_model.MockHttp):
    """The benchmarks' instant model server, answering Chat Completions with one sentence."""

    def _handle(self, head: bytes, body: bytes, *, close: bool) -> None:
        asks_models = head.startswith(b"GET ") and b"/models" in head.split(b"\r\n", 1)[0]
        self._send(mock_model.MODELS_HTTP if asks_models else _CHAT_HTTP, close=close)


_CHAT_HTTP = mock_model._http("200 OK", CHAT_ANSWER)


class Measured:
    """``with measured:`` marks what callgrind counts when the run was started with the
    helper library (``REGIONS``; valgrind then runs everything else uninstrumented, several
    times faster, so a long conversation's earlier calls cost little); else nothing."""

    def __init__(self) -> None:
        path = os.environ.get(REGIONS)
        self._lib = ctypes.CDLL(path) if path else None

    def __enter__(self) -> None:
        if self._lib is not None:
            self._lib.measure_on()

    def __exit__(self, *exc: object) -> None:
        if self._lib is not None:
            self._lib.measure_off()


def conversation(turns: int) -> list[JsonDict]:
    """The messages a harness sends on its call at ``turns`` turns (the model's answers kept)."""
    messages: list[JsonDict] = [
        {"role": "system", "content": "You are a helpful agent. " * 5},
        {"role": "user", "content": "Do the task."},
    ]
    for turn in range(turns - 1):
        messages.append({"role": "assistant", "content": REPLY})
        messages.append({"role": "user", "content": f"observation {turn} " * 20})
    return messages


def _bodies(turns: int) -> list[bytes]:
    return [orjson.dumps({"model": "m", "messages": conversation(t)}) for t in range(1, turns + 1)]


def _scope(gateway: Gateway) -> dict[str, Any]:
    rollout = gateway.open()
    return {
        "path": f"/r/{rollout.id}/v1/chat/completions",
        "method": "POST",
        "headers": [(b"authorization", b"Bearer " + rollout.api_key.encode())],
    }


async def handler(kind: str, turns: int, rollouts: int, measured: bool = True) -> float:
    """Microseconds of handler CPU for the ``kind`` call at ``turns`` turns (``measured``
    False: only what leads up to it, for the instruction count's difference)."""
    model = InstantModel()
    gateway = Gateway(model)
    gateway.url = "http://127.0.0.1:0"  # the handler alone: nothing listens
    app = GatewayApp(gateway)
    bodies = _bodies(turns)
    for _ in range(16):  # lazy imports done and the interpreter's specialising settled
        warm = _scope(gateway)
        for body in bodies[:3]:
            assert (await app.answer(warm, body))[0] == 200
        gateway.rollouts[warm["path"].split("/")[2]].close()
    spent = 0.0
    for _ in range(rollouts):
        scope = _scope(gateway)
        if kind == "continued":
            before, body = bodies[:-1], bodies[-1]
        elif kind == "repeat":
            before, body = bodies[-1:], bodies[-1]
        else:
            before, body = [], bodies[-1]
        for earlier in before:
            assert (await app.answer(scope, earlier))[0] == 200
        if not measured:
            continue
        started = time.process_time()
        status, _, _ = await app.answer(scope, body)
        spent += time.process_time() - started
        assert status == 200
        rollout = gateway.rollouts[scope["path"].split("/")[2]]
        if kind == "continued":  # the fast path found the right parent
            assert [c.parent for c in rollout.calls] == [None, *range(turns - 1)]
        rollout.close()  # done with: a real gateway does not keep them (nor collect them)
    started = time.process_time()
    for _ in range(rollouts if measured else 0):
        await model.respond({"input": []})
    direct = time.process_time() - started
    return 1e6 * (spent - direct) / max(rollouts, 1)


async def http(via_gateway: bool, turns: int, rollouts: int, measured: bool = True) -> float:
    """Microseconds of this process' CPU for a harness' call at ``turns`` turns (the calls
    before it made first, unmeasured), through the gateway or straight to the instant server;
    the mean of ``rollouts`` conversations (``measured`` False: only what leads up to the
    call, for the instruction count's difference)."""
    from palaestra.models.openai.chat import OpenAIChatModel
    from palaestra.transport import HttpClient

    loop = asyncio.get_running_loop()
    counters = mock_model.Counters()
    server = await loop.create_server(lambda: InstantChat(counters, 0.0), "127.0.0.1", 0)
    instant = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    client = HttpClient()
    model = OpenAIChatModel(instant)
    gateway = Gateway(model)
    await gateway.start()
    bodies = _bodies(turns)
    region = Measured()

    async def call(url: str, headers: dict[str, str], body: bytes) -> None:
        answer = await client.request("POST", url, body=body, headers=headers)
        assert answer.status == 200, answer.body[:200]
        assert orjson.loads(answer.body)["choices"][0]["message"]["content"] == REPLY

    async def conversation_once(warm: bool = False) -> float:
        if via_gateway:
            rollout = gateway.open()
            url = f"{rollout.base_url}/chat/completions"
            headers = {"Authorization": f"Bearer {rollout.api_key}"}
        else:
            url, headers = f"{instant}/chat/completions", {"Authorization": "Bearer none"}
        headers["Content-Type"] = "application/json"
        for body in bodies[:-1]:
            await call(url, headers, body)
        if not measured:
            return 0.0
        started = time.process_time()
        with contextlib.nullcontext() if warm else region:
            await call(url, headers, bodies[-1])
        spent = time.process_time() - started
        if via_gateway:
            assert [c.parent for c in rollout.calls] == [None, *range(turns - 1)]
            rollout.close()
        return spent

    try:
        await conversation_once(warm=True)  # connections opened, every code path run once
        spent = 0.0
        for _ in range(rollouts):
            spent += await conversation_once()
    finally:
        await gateway.aclose()
        await model.aclose()
        await client.aclose()
        server.close()
    return 1e6 * spent / rollouts


def part(what: str, turns: int, repeats: int) -> None:
    """``repeats`` times one part of a call that grows with its history, in a ``measured``
    block: ``parse`` the request, ``encode`` its messages, ``compare`` them with the last
    call's (what ``palaestra.gateway.memo`` does to find what is new)."""
    bodies = _bodies(turns)
    messages = orjson.loads(bodies[-1])["messages"]
    previous = orjson.loads(bodies[-2])["messages"] if turns > 1 else []
    with Measured():
        for _ in range(repeats):
            if what == "parse":
                orjson.loads(bodies[-1])
            elif what == "encode":
                orjson.dumps({"messages": messages})
            else:
                assert messages[: len(previous)] == previous


# --- instructions, under callgrind ------------------------------------------------------------


def _instructions(*args: str, regions: bool = False) -> int:
    """The instructions of this script's main thread run as ``--run *args`` under callgrind
    (with ``regions``, only those inside its ``measured`` blocks)."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "cg.out"
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        options = ["--separate-threads=yes", f"--callgrind-out-file={out}"]
        if regions:
            source, library = Path(scratch) / "regions.c", Path(scratch) / "regions.so"
            source.write_bytes(_REGIONS_C)
            subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", library, source], check=True)
            env[REGIONS] = str(library)
            options += ["--instr-atstart=no", "--collect-atstart=no"]
        command = ["valgrind", "--tool=callgrind", *options, sys.executable, __file__]
        done = subprocess.run([*command, "--run", *args], env=env, capture_output=True, text=True)
        found = re.search(rb"^totals: (\d+)", Path(f"{out}-01").read_bytes(), re.MULTILINE)
        if done.returncode != 0 or found is None:
            raise SystemExit(f"callgrind printed no count:\n{done.stderr[-1500:]}")
        return int(found.group(1))


def instructions(
    turns: tuple[int, ...], rollouts: int, through_http: bool, kinds: list[str], jobs: int
) -> None:
    """Each figure as the difference of two callgrind runs, ``jobs`` runs at a time (a run
    under valgrind is slow, and its count does not move with what else runs)."""
    figures = [(kind, length) for kind in kinds for length in turns]
    if through_http:
        figures = [(side, length) for length in turns for side in ("gateway", "direct")]
    if through_http:  # the measured calls alone are counted: one run per figure
        runs = [("http", what, str(length), str(rollouts), "1") for what, length in figures]
    else:  # the difference of a run with the measured calls and one without
        runs = [
            ("handler", what, str(length), str(rollouts), flag)
            for what, length in figures
            for flag in "10"
        ]
    with ThreadPoolExecutor(jobs) as pool:
        counted = pool.map(lambda run: _instructions(*run, regions=through_http), runs)
        counts = dict(zip(runs, counted, strict=True))
    per_call = {
        (what, length): (
            counts[runs[0][0], what, str(length), str(rollouts), "1"]
            - counts.get(("handler", what, str(length), str(rollouts), "0"), 0)
        )
        / rollouts
        for what, length in figures
    }
    if not through_http:
        for kind, length in figures:
            figure = per_call[kind, length]
            print(f"{kind:>9} {length:>3} turns: {figure:>9,.0f} instructions per call")
        return
    for length in turns:
        through, direct = per_call["gateway", length], per_call["direct", length]
        print(
            f"HTTP {length:>3} turns: {through - direct:>9,.0f} instructions per call more "
            f"through the gateway ({through:,.0f} vs {direct:,.0f})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--http", action="store_true", help="through HTTP, beside a direct call")
    parser.add_argument("--instructions", action="store_true", help="count instructions")
    parser.add_argument("--turns", type=int, nargs="*", default=list(TURNS))
    parser.add_argument("--rollouts", type=int, default=0, help="per figure (default: by size)")
    parser.add_argument("--kinds", nargs="*", default=list(KINDS), choices=KINDS)
    parser.add_argument("--jobs", type=int, default=1, help="callgrind runs at a time")
    parser.add_argument("--parts", action="store_true", help="count the parts that grow")
    parser.add_argument("--run", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:  # one measured run, for callgrind
        gc.disable()  # a collection lands in one of the two runs compared, not in the other
        what, *rest = args.run
        if what == "part":
            kind, length, count = rest
            part(kind, int(length), int(count))
        elif what == "handler":
            kind, length, count, measured = rest
            asyncio.run(handler(kind, int(length), int(count), measured == "1"))
        else:
            side, length, count, measured = rest
            run_on_fast_loop(http(side == "gateway", int(length), int(count), measured == "1"))
        return
    turns = tuple(args.turns)
    if args.parts:
        for length in turns:
            for what in ("parse", "encode", "compare"):
                count = _instructions("part", what, str(length), "50", regions=True) / 50
                print(f"{what:>8} {length:>3} turns: {count:>9,.0f} instructions", flush=True)
        return
    if args.instructions:
        instructions(turns, args.rollouts or 20, args.http, args.kinds, args.jobs)
        return
    if args.http:
        for length in turns:
            rollouts = args.rollouts or max(4000 // length, 40)
            through = run_on_fast_loop(http(True, length, rollouts))
            direct = run_on_fast_loop(http(False, length, rollouts))
            print(
                f"HTTP {length:>3} turns: {through - direct:6.1f} us per call more through the "
                f"gateway ({through:.1f} vs {direct:.1f} us of CPU per call)"
            )
        return
    for kind in args.kinds:
        for length in turns:
            rollouts = args.rollouts or (max(20000 // length, 100) if kind == "continued" else 3000)
            per_call = asyncio.run(handler(kind, length, rollouts))
            print(f"{kind:>9} {length:>3} turns: {per_call:6.1f} us of gateway CPU per call")


if __name__ == "__main__":
    main()

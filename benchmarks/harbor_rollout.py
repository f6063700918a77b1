"""A Harbor task's rollout, part by part, per provider (issue 26 §1): what palaestra adds.

The task is palaestra's calculator export (``palaestra tasks calculator --format harbor``): its
image builds once (cached), then each rollout is ``seed`` (build found in the cache, a box
started), the agent's first ``bash`` (the shell starts in the box; it writes the answer),
``verify`` (the agent's shell stopped, ``tests/`` staged, ``/logs/verifier`` emptied,
``test.sh`` run, the reward read) and ``close`` (the box torn down). p50/p99 of each part and
rollouts per second, one rollout at a time. ``verify`` includes the task's own ``test.sh``
(``python3 check.py``), measured alone as ``test.sh alone``.

Run as root from the repository root (the offline base image built):
``.venv/bin/python benchmarks/harbor_rollout.py [--rollouts 50] [--sandbox rootfs docker]
[--write]``.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from palaestra.environment.kinds.harbor import HarborEnvironment, HarborState
from palaestra.environment.kinds.harbor.boxes import run
from palaestra.environment.kinds.harbor.tasks import task_row
from palaestra.environment.sessions import Session
from palaestra.run.harbor_export import export_harbor

RESULTS = Path(__file__).parent / "results" / "harbor.md"
PARTS = ("seed", "first bash", "verify", "close", "test.sh alone")


async def measure(folder: Path, sandbox: str, rollouts: int) -> dict[str, list[float]]:
    environment = HarborEnvironment(str(folder), sandbox=sandbox)
    environment.provider()
    name = sorted(environment.tasks)[0]
    row = task_row(name, environment.tasks[name])
    answer = _answer(folder / name)
    times: dict[str, list[float]] = {part: [] for part in PARTS}
    try:
        for index in range(rollouts + 1):  # the first builds the image: not counted
            started = time.perf_counter()
            state = await environment.seed(row)
            seeded = time.perf_counter()
            session = Session(f"s{index}", row, state)
            await environment.bash(session, f"echo {answer} > /app/answer.txt")
            worked = time.perf_counter()
            verdict = await environment.verify(session, {})
            verified = time.perf_counter()
            assert isinstance(state, HarborState) and state.box is not None
            alone = time.perf_counter()
            await run(state.box, "bash /tests/test.sh", timeout=60)
            alone = time.perf_counter() - alone
            closing = time.perf_counter()
            await environment.close(session)
            closed = time.perf_counter()
            if verdict.reward != 1.0:
                raise SystemExit(f"rollout {index} scored {verdict}")
            if index:
                for part, seconds in zip(
                    PARTS,
                    (seeded - started, worked - seeded, verified - worked, closed - closing, alone),
                    strict=True,
                ):
                    times[part].append(seconds)
    finally:
        await environment.aclose()
    return times


def _answer(task: Path) -> str:
    import json

    return str(json.loads((task / "tests" / "task.json").read_text())["expected_answer"])


def table(sandbox: str, times: dict[str, list[float]]) -> list[str]:
    lines = [f"### {sandbox}", "", "| part | p50 ms | p99 ms |", "|---|---:|---:|"]
    for part, values in times.items():
        ordered = sorted(values)
        p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
        lines.append(f"| {part} | {statistics.median(ordered) * 1000:.0f} | {p99 * 1000:.0f} |")
    total = sum(sum(times[part]) for part in ("seed", "first bash", "verify", "close"))
    lines += ["", f"{len(times['seed']) / total:.2f} rollouts per second, one at a time.", ""]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=50)
    parser.add_argument("--sandbox", nargs="+", default=["rootfs", "docker"])
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS}")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="palaestra-bench-harbor-") as work:
        folder = Path(work) / "calc"
        export_harbor("calculator", folder, num_tasks=1)
        lines = [
            "# A Harbor rollout, part by part",
            "",
            f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
            f"{options.rollouts} rollouts of a calculator Harbor task per provider "
            "(`benchmarks/harbor_rollout.py`).",
            "",
        ]
        for sandbox in options.sandbox:
            times = asyncio.run(measure(folder, sandbox, options.rollouts))
            lines += table(sandbox, times)
    text = "\n".join(lines)
    print(text)
    if options.write:
        RESULTS.write_text(text)


if __name__ == "__main__":
    main()

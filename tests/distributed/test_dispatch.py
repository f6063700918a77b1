"""``Dispatcher`` against workers simulated in this process: who reruns, who is a
``worker_crash``, and when it gives up. (The same with real processes: ``test_process.py``.)"""

from __future__ import annotations

import asyncio

import pytest

from palaestra.distributed.codec import decode_task, encode_result
from palaestra.distributed.dispatch import CRASHES_ALLOWED, Dispatcher, Worker, WorkerLost
from palaestra.errors import RunStopped, WorkerCrash
from palaestra.types import AgentResult, JsonDict, Verdict


class FakeWorker(Worker):
    """Answers after a few loop turns; a task with ``"kill"`` kills it and all it runs."""

    def __init__(self, index: int, *, starts: bool = True) -> None:
        self.name = f"fake {index}"
        self.starts = starts
        self.pending: list[asyncio.Future[bytes]] = []
        self.ran: list[tuple[int, int]] = []
        """(task, other rollouts in flight here when it started)"""
        self.dead = False

    async def start(self) -> JsonDict:
        if not self.starts:
            return {"error": {"class": "", "message": "cannot start"}}
        return {"label": "fake_agent", "facts": {"env": {"name": "fake"}}}

    async def run(self, payload: bytes) -> bytes:
        task = decode_task(payload)
        self.ran.append((task["n"], sum(not answer.done() for answer in self.pending)))
        answer: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self.pending.append(answer)
        if task.get("kill"):
            asyncio.get_running_loop().call_soon(self.die)
        else:
            result = AgentResult(verdict=Verdict(reward=task["n"]))
            asyncio.get_running_loop().call_later(0.01, _answer, answer, encode_result(result))
        return await answer

    def die(self) -> None:
        self.dead = True
        for answer in self.pending:
            if not answer.done():
                answer.set_exception(WorkerLost("killed"))

    async def stop(self) -> None:
        self.die()


def _answer(answer: asyncio.Future[bytes], payload: bytes) -> None:
    if not answer.done():
        answer.set_result(payload)


async def _run_all(dispatcher: Dispatcher, tasks: list[JsonDict]) -> list[object]:
    await dispatcher.start()
    try:
        return await asyncio.gather(*(dispatcher.run(t) for t in tasks), return_exceptions=True)
    finally:
        await dispatcher.aclose()


def test_rollouts_that_shared_a_worker_with_a_killer_finish_and_the_killer_is_a_worker_crash() -> (
    None
):
    made: list[FakeWorker] = []

    def factory(index: int) -> FakeWorker:
        made.append(FakeWorker(index))
        return made[-1]

    dispatcher = Dispatcher(factory, 2)
    tasks = [{"n": n, "kill": n == 3} for n in range(8)]
    results = asyncio.run(_run_all(dispatcher, tasks))
    crash = results[3]
    assert isinstance(crash, WorkerCrash) and "2 times" in crash.reason
    assert crash.worker_reruns == CRASHES_ALLOWED - 1  # its failure record says it was rerun
    for n, result in enumerate(results):
        if n != 3:
            assert isinstance(result, AgentResult) and result.verdict is not None
            assert result.verdict.reward == n
    # the killer ran CRASHES_ALLOWED times, the last time alone on its worker
    runs = [(w, others) for w in made for n, others in w.ran if n == 3]
    assert len(runs) == CRASHES_ALLOWED and all(w.dead for w, _ in runs)
    assert runs[-1][1] == 0
    assert dispatcher.replaced >= CRASHES_ALLOWED


def test_workers_that_die_and_cannot_be_replaced_stop_the_run_instead_of_looping() -> None:
    made: list[FakeWorker] = []

    def factory(index: int) -> FakeWorker:
        made.append(FakeWorker(index, starts=len(made) < 2))  # only the first two start
        return made[-1]

    dispatcher = Dispatcher(factory, 2, lost_limit=4)
    tasks = [{"n": 0, "kill": True}, {"n": 1, "kill": True}, {"n": 2}, {"n": 3}]
    results = asyncio.run(_run_all(dispatcher, tasks))
    stopped = [r for r in results if isinstance(r, RunStopped)]
    assert stopped and "workers died or failed to start" in stopped[0].reason
    assert "--resume" in stopped[0].reason
    assert len(made) <= 2 + dispatcher.lost_limit + 2  # bounded: it gave up


def test_a_worker_that_cannot_start_fails_the_check_with_its_reason() -> None:
    dispatcher = Dispatcher(lambda index: FakeWorker(index, starts=index == 0), 2)
    with pytest.raises(Exception, match="fake 1 could not start: cannot start"):
        asyncio.run(dispatcher.start())

from __future__ import annotations

import pytest

from palaestra import Environment, LocalEnvironmentClient, Session, tool
from palaestra.agents import ToolCallingAgent
from palaestra.environment.sessions import SessionExpired, SessionStore
from palaestra.types import FailureKind, JsonDict
from tests.support.fake_model import FakeModel, call, response


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_sessions_are_isolated_and_expire_after_idle_ttl() -> None:
    clock = Clock()
    store = SessionStore(ttl=10, clock=clock)
    a = store.open({"task": 1}, {"value": 1})
    b = store.open({"task": 2}, {"value": 2})
    assert a.id != b.id
    store.get(a.id).state["value"] += 5
    assert store.get(b.id).state == {"value": 2}
    clock.now = 8
    store.get(a.id)  # use keeps it alive
    clock.now = 15
    assert [s.id for s in store.sweep()] == [b.id]
    assert store.get(a.id).task == {"task": 1}
    clock.now = 30
    with pytest.raises(SessionExpired):
        store.get(a.id)
    assert len(store) == 0


def test_closed_session_is_gone() -> None:
    store = SessionStore(ttl=10)
    session = store.open({}, None)
    assert store.pop(session.id) is session
    with pytest.raises(SessionExpired):
        store.get(session.id)


def test_sweep_takes_the_least_recently_used_first_and_stops_at_a_live_one() -> None:
    clock = Clock()
    store = SessionStore(ttl=10, clock=clock)
    a, b, c = (store.open({"task": i}, None) for i in range(3))
    clock.now = 6
    store.get(a.id)  # a is now the most recently used
    clock.now = 12
    assert [s.id for s in store.sweep()] == [b.id, c.id]
    assert len(store) == 1 and store.get(a.id) is a
    clock.now = 30
    assert [s.id for s in store.sweep()] == [a.id]


class Forgetful(Environment):
    """Sessions expire the moment they are opened."""

    session_ttl = 0.0

    @tool
    async def look(self, session: Session) -> str:
        """Look."""
        return "seen"

    def verify(self, session: Session, response: JsonDict) -> float:
        return 1.0


async def test_a_session_that_expires_mid_rollout_fails_it_as_session_lost() -> None:
    model = FakeModel(lambda params: response(call("look", "{}")))
    task: JsonDict = {"responses_create_params": {"input": "look"}}
    result = await ToolCallingAgent().run(task, LocalEnvironmentClient(Forgetful()), model)
    assert result.failure is not None and result.failure.kind is FailureKind.SESSION_LOST
    assert "unknown, closed or expired" in result.failure.reason


def test_the_bytes_charged_to_sessions_leave_with_them_however_they_go() -> None:
    clock = Clock()
    store = SessionStore(ttl=10, clock=clock)
    closed, swept, lost, drained = (store.open({}, None) for _ in range(4))
    for session, size in ((closed, 1), (swept, 20), (lost, 300), (drained, 4000)):
        store.charge(session.id, size)
    assert store.held_bytes == 4321
    store.pop(closed.id)
    assert store.held_bytes == 4320
    clock.now = 5
    store.get(lost.id)
    store.get(drained.id)
    clock.now = 12
    assert store.sweep() == [swept]
    assert store.held_bytes == 4300
    clock.now = 20
    with pytest.raises(SessionExpired):
        store.get(lost.id)  # expired when asked for
    assert store.held_bytes == 4000
    store.charge(drained.id, 50)  # charged again: replaces, never adds
    assert store.held_bytes == 50
    store.drain()
    assert store.held_bytes == 0

"""The rollout scopes a model server keeps by key, and the keys it accepts."""

from __future__ import annotations

from palaestra.models.affinity import KeyedScopes, RolloutScope, valid_key


def test_a_scope_keeps_the_key_it_was_given_or_draws_one_once() -> None:
    assert RolloutScope("abc").key == "abc"
    drawn = RolloutScope()
    assert drawn.key == drawn.key
    assert len(drawn.key) == 16
    assert drawn.key != RolloutScope().key


def test_the_same_key_finds_the_same_scope() -> None:
    scopes = KeyedScopes()
    first = scopes.scope("r1")
    assert scopes.scope("r1") is first
    assert scopes.scope("r2") is not first
    assert first.key == "r1"


def test_beyond_the_cap_the_least_recently_heard_rollout_is_forgotten() -> None:
    scopes = KeyedScopes(cap=2)
    old, busy = scopes.scope("old"), scopes.scope("busy")
    assert scopes.scope("old") is old  # heard from again: now the most recent
    scopes.scope("new")
    assert len(scopes) == 2
    assert scopes.scope("old") is old
    assert scopes.scope("busy") is not busy  # forgotten: a fresh scope


def test_only_short_plain_keys_name_a_rollout() -> None:
    assert valid_key("0123abcd-_.") == "0123abcd-_."
    assert valid_key(None) is None
    assert valid_key("") is None
    assert valid_key("x" * 65) is None  # the server keeps 65,536 of them: no long ones
    assert valid_key("a b") is None
    assert valid_key("a\r\nX-Injected: 1") is None

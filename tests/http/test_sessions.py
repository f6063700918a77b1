"""Session tokens: signed by the server, checked on every request."""

from __future__ import annotations

import pytest

from palaestra.http.sessions import SessionSigner


@pytest.mark.parametrize("secret", [b"k" * 32, b"k" * 200])
def test_a_token_names_its_session_and_a_changed_one_names_none(secret: bytes) -> None:
    signer = SessionSigner(secret)
    token = signer.token("abc123")
    assert signer.session_id(token) == "abc123"
    assert signer.session_id("abc124" + token[6:]) is None  # another id, the same signature
    assert signer.session_id(token[:-1] + ("0" if token[-1] != "0" else "1")) is None
    assert SessionSigner(b"other" * 8).session_id(token) is None  # another server's secret
    assert signer.session_id("no-signature") is None


@pytest.mark.parametrize("token", ["abc123.ü", "ü.abc", "\xff\xfe.\x80"])
def test_a_token_that_is_not_ascii_names_no_session(token: str) -> None:
    assert SessionSigner(b"k" * 32).session_id(token) is None  # before: TypeError, a 500

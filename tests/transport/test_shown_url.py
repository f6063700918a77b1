"""A URL shown to a reader never carries its credentials."""

from __future__ import annotations

import pytest

from palaestra.transport import has_credentials, redacted_url, shown_url, unix_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://user:secret@127.0.0.1:9/v1", "http://***@127.0.0.1:9/v1"),
        ("https://secret@host/v1/responses", "https://***@host/v1/responses"),
        ("http://u:se/cret@host/v1", "http://***@host/v1"),  # an unescaped / in the password
        ("http://host/v1?api_key=secret&x=1", "http://host/v1?api_key=***&x=1"),
        ("http://host/v1?x=1&Token=secret#top", "http://host/v1?x=1&Token=***#top"),
        ("http://a:secret@host/v1?key=secret", "http://***@host/v1?key=***"),
    ],
)
def test_credentials_in_a_url_are_not_shown(url: str, shown: str) -> None:
    assert shown_url(url) == redacted_url(url) == shown
    assert has_credentials(url) == ("@" in shown)


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8000/v1", "http://host/v1?api-version=2024", "not a url", ""]
)
def test_a_url_without_credentials_is_shown_as_written(url: str) -> None:
    assert redacted_url(url) is url
    assert shown_url(url) == url
    assert not has_credentials(url)


def test_a_unix_socket_url_is_shown_by_its_path() -> None:
    assert shown_url(unix_url("/tmp/s.sock") + "/v1") == "unix:/tmp/s.sock/v1"

"""Where an ``ors:`` environment is: the server, the environment and the split in its URL."""

from __future__ import annotations

import pytest

from palaestra.environment.kinds.ors import OrsAddress, parse_address
from palaestra.errors import ConfigError


@pytest.mark.parametrize(
    ("spec", "address"),
    [
        ("http://127.0.0.1:8080", OrsAddress("http://127.0.0.1:8080")),
        ("http://127.0.0.1:8080/", OrsAddress("http://127.0.0.1:8080")),
        ("http://h:1/adder?split=test", OrsAddress("http://h:1", "adder", "test")),
        ("https://h/envs/adder", OrsAddress("https://h/envs", "adder")),
    ],
)
def test_the_url_names_the_server_and_may_name_the_environment_and_split(
    spec: str, address: OrsAddress
) -> None:
    assert parse_address(spec) == address


@pytest.mark.parametrize(
    ("spec", "said"),
    [("127.0.0.1:8080", "needs a server URL"), ("http://h:1/a?splt=x", "unknown query parameter")],
)
def test_a_url_that_is_not_one_is_refused_in_one_line(spec: str, said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        parse_address(spec)

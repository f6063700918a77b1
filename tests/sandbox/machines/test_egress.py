"""The proxy's policy: which hosts a phase's allowlist lets through (Harbor's entry kinds)."""

from __future__ import annotations

import ipaddress

import pytest

from palaestra.sandbox.machines.egress import NO_NETWORK, EgressProxy, Policy

POLICY = Policy(("example.com", "*.pypi.org", "192.0.2.7", "198.51.100.0/24", "2001:db8::1"))


@pytest.mark.parametrize(
    "host",
    ["example.com", "files.pypi.org", "a.b.pypi.org", "192.0.2.7", "198.51.100.9", "2001:db8::1"],
)
def test_a_named_host_passes(host: str) -> None:
    assert POLICY.refusal(host) is None


@pytest.mark.parametrize(
    "host",
    [
        "www.example.com",
        "pypi.org",
        "evilpypi.org",
        "192.0.2.8",
        "198.51.101.1",
        "example.com.evil",
    ],
)
def test_a_host_not_named_is_refused(host: str) -> None:
    assert POLICY.refusal(host) == "not in the task's allowlist"


def test_no_network_refuses_everything_and_public_nothing() -> None:
    assert NO_NETWORK.refusal("example.com") == "this phase has no network"
    assert Policy(public=True).refusal("anything.example") is None


async def test_a_name_leading_to_a_private_address_is_refused_unless_the_user_allows_it() -> None:
    assert (await EgressProxy()._resolve("localhost", 80))[1] is not None
    assert (await EgressProxy()._resolve("10.1.2.3", 80))[1] is not None
    assert (await EgressProxy()._resolve("169.254.169.254", 80))[1] is not None
    assert (await EgressProxy()._resolve("::ffff:127.0.0.1", 80))[1] is not None
    allowed = await EgressProxy(["10.0.0.0/8"])._resolve("10.1.2.3", 80)
    assert allowed == ([ipaddress.ip_address("10.1.2.3")], None)

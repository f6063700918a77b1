"""A Harbor task's network policy per phase, served to its machine by a filtering proxy.

Harbor 1.4 gives each machine a baseline (``[environment] network_mode``, ``allowed_hosts``)
and each phase an override (``[agent]``, ``[verifier]``, and a step's): ``no-network``,
``allowlist`` (the hosts named) or ``public``. Here, as Harbor resolves it:

- **environment** (the machine's start and health checks): the agent machine's baseline;
- **agent**: the step's ``[agent]`` policy, else the task's, else the baseline;
- **verifier** (collect hooks and the tests): the step's ``[verifier]`` policy, else the
  task's, else the baseline of the machine the tests run in (the agent's when shared, the
  separate verifier's ``[verifier.environment]`` else the task's ``[environment]``).

A machine none of whose phases has a network is as every box here: no network at all, no
proxy. Otherwise its box shares one network namespace (``BoxSpec.loopback``) in which an
``EgressProxy`` of the host listens on ``127.0.0.1`` (``NetworkedBox``); every command of the
box is given the proxy variables and the policy in force follows the phase. ``public`` is
refused when the task is loaded unless the user opts in (``network_public``): then the proxy
passes every public host (still no private address), each one counted on the row.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from palaestra.environment.kinds.harbor.boxes import AgentView
from palaestra.errors import ConfigError, SandboxFailure
from palaestra.sandbox.machines.egress import NO_NETWORK, EgressProxy, Policy
from palaestra.sandbox.machines.provider import Box, Image
from palaestra.types import JsonDict
from palaestra.wire.harbor import EnvironmentConfig, StepConfig, TaskConfig, VerifierConfig

NETWORK_FIELD = "network"
"""The row's field: per phase, the hosts the machine's requests went to, allowed or refused."""
REFUSED_FIELD = "network_refused"
"""The row's count of requests the proxy refused (absent when no machine had a proxy)."""


def private_ranges(given: str | Sequence[str]) -> list[str]:
    """The user's ``network_private`` (comma-separated, or a list) as address ranges; a
    ``ConfigError`` naming an entry that is not an address or a CIDR range."""
    entries = given.split(",") if isinstance(given, str) else list(given)
    ranges: list[str] = []
    for entry in (str(entry).strip() for entry in entries):
        if not entry:
            continue
        try:
            ranges.append(ipaddress.ip_network(entry, strict=False).compressed)
        except ValueError:
            raise ConfigError(
                f"network_private: {entry!r} is not an IP address or a CIDR range"
            ) from None
    return ranges


def policy_of(mode: str | None, hosts: Sequence[str] | None) -> Policy | None:
    """The proxy's policy for a Harbor ``network_mode`` (None: no explicit policy)."""
    if mode is None:
        return None
    if mode == "public":
        return Policy(public=True)
    if mode == "allowlist":
        return Policy(tuple(hosts or ()))
    return NO_NETWORK


def baseline(environment: EnvironmentConfig) -> Policy:
    policy = policy_of(environment.network_mode, environment.allowed_hosts)
    assert policy is not None
    return policy


def agent_policy(config: TaskConfig, step: StepConfig | None) -> Policy:
    explicit = policy_of(step.agent.network_mode, step.agent.allowed_hosts) if step else None
    explicit = explicit or policy_of(config.agent.network_mode, config.agent.allowed_hosts)
    return explicit or baseline(config.environment)


def verifier_policy(config: TaskConfig, step: StepConfig | None, separate: bool) -> Policy:
    verifier: VerifierConfig | None = step.verifier if step is not None else None
    explicit = policy_of(verifier.network_mode, verifier.allowed_hosts) if verifier else None
    explicit = explicit or policy_of(config.verifier.network_mode, config.verifier.allowed_hosts)
    if explicit is not None:
        return explicit
    machine = config.environment
    if separate:
        machine = (
            (verifier.environment if verifier is not None else None)
            or config.verifier.environment
            or config.environment
        )
    return baseline(machine)


def agent_machine_networked(config: TaskConfig) -> bool:
    """Whether any phase run in the agent's machine has a network (then it gets a proxy)."""
    steps: list[StepConfig | None] = [*(config.steps or [])] or [None]
    policies = [baseline(config.environment)]
    for step in steps:
        policies.append(agent_policy(config, step))
        if not config.separate_verifier(step):
            policies.append(verifier_policy(config, step, separate=False))
    return any(policy != NO_NETWORK for policy in policies)


class NetworkedBox(AgentView):
    """A box served by its own ``EgressProxy``: every command gets the proxy variables (the
    caller's environment over them), sealing it listens again in the namespace the seal
    left, and closing it closes the proxy and the box."""

    def __init__(self, box: Box, proxy: EgressProxy) -> None:
        super().__init__(box, user=None, workdir=None, env=proxy.environment())
        self.proxy = proxy

    @property
    def root(self) -> Path:
        return self.box.root

    @root.setter
    def root(self, value: Path) -> None:
        """The box's own root is its provider's to change (a container sealed)."""

    @property
    def image(self) -> Image:
        return self.box.image

    @image.setter
    def image(self, value: Image) -> None:
        """The image is the box's."""

    async def serve(self) -> None:
        """Listen in the box's network namespace (``SandboxFailure`` when it has none)."""
        namespace = self.box.network_namespace()
        if namespace is None:
            raise SandboxFailure("the box shares no network namespace to serve a proxy in")
        await self.proxy.serve_in(namespace)

    def network_namespace(self) -> str | None:
        return self.box.network_namespace()

    async def seal(self) -> None:
        await self.box.seal()
        await self.serve()

    async def close(self) -> None:
        try:
            await self.proxy.close()
        finally:
            await self.box.close()


def network_row(proxies: Sequence[EgressProxy]) -> JsonDict:
    """The row's fields for a rollout's ``proxies`` (their tallies merged by phase), empty
    when it had none."""
    if not proxies:
        return {}
    merged: dict[str, dict[str, dict[str, Any]]] = {}
    for proxy in proxies:
        for phase, tally in proxy.tally().items():
            into = merged.setdefault(phase, {})
            for kind, hosts in tally.items():
                counts = into.setdefault(kind, {})
                for host, value in hosts.items():
                    if kind == "why":
                        counts.setdefault(host, value)
                    else:
                        counts[host] = counts.get(host, 0) + value
    return {NETWORK_FIELD: merged, REFUSED_FIELD: sum(proxy.refused() for proxy in proxies)}


def enter(box: Box | None, phase: str, policy: Policy) -> None:
    """Switch ``box``'s proxy (if it has one) to ``phase`` under ``policy``."""
    if isinstance(box, NetworkedBox):
        box.proxy.enter(phase, policy)

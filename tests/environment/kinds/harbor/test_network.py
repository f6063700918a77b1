"""A task's allowlist, per phase, through the filtering proxy: on both providers, with
loopback-only stand-in servers on the host (one named in the allowlist, one not)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from palaestra.environment.kinds.harbor import HarborEnvironment
from palaestra.environment.kinds.harbor.network import NETWORK_FIELD, REFUSED_FIELD
from palaestra.environment.kinds.harbor.tasks import task_row
from palaestra.environment.sessions import Session
from palaestra.errors import ConfigError
from palaestra.sandbox.machines.provider import Provider

ALLOWED, OTHER = "127.0.0.2", "127.0.0.3"
"""Host loopback addresses: inside a box they are the box's own, so only the proxy reaches
the host's."""

DOCKERFILE = """\
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends python3 \\
    && useradd --create-home agent
WORKDIR /app
"""
FETCH = """\
import http.client, os, sys, urllib.request
def get(url):
    try:
        with urllib.request.urlopen(url, timeout=20) as answer:
            return answer.read().decode()
    except Exception as error:
        return f"refused {getattr(error, 'code', type(error).__name__)}"
def tunnel(host, port):
    connection = http.client.HTTPConnection("127.0.0.1", 3128, timeout=20)
    try:
        connection.set_tunnel(host, int(port))
        connection.request("GET", "/")
        return connection.getresponse().read().decode()
    except Exception as error:
        return f"refused {type(error).__name__}"
for url in sys.argv[1:]:
    print(tunnel(*url.split(":")) if not url.startswith("http") else get(url))
"""
TEST_SH = """\
#!/bin/bash
python3 /tests/fetch.py "http://{allowed}/" "http://{other}/" > /logs/verifier/seen.txt
cat /logs/verifier/seen.txt
if [ "$(head -1 /logs/verifier/seen.txt)" = "{allowed_says}" ]; then r=1; else r=0; fi
echo $r > /logs/verifier/reward.txt
"""


class StandIn(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        host, _ = self.connection.getsockname()
        body = f"stand-in {host}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        """Quiet."""


@pytest.fixture
def stand_ins() -> Iterator[dict[str, str]]:
    """Two HTTP servers on the host's loopback: ``allowed`` and ``other`` as host:port."""
    servers = [http.server.ThreadingHTTPServer((host, 0), StandIn) for host in (ALLOWED, OTHER)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield {
            name: f"{server.server_address[0]!s}:{server.server_address[1]}"
            for name, server in zip(("allowed", "other"), servers, strict=True)
        }
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


def network_task(path: Path, stand_ins: dict[str, str], toml_network: str) -> Path:
    (path / "environment").mkdir(parents=True)
    (path / "environment" / "Dockerfile").write_text(DOCKERFILE)
    (path / "instruction.md").write_text("Fetch what you may.\n")
    (path / "task.toml").write_text(
        'schema_version = "1.4"\n[agent]\ntimeout_sec = 120.0\nuser = "agent"\n'
        "[verifier]\ntimeout_sec = 60.0\n" + toml_network
    )
    (path / "tests").mkdir()
    (path / "tests" / "fetch.py").write_text(FETCH)
    test_sh = TEST_SH.format(
        allowed=stand_ins["allowed"],
        other=stand_ins["other"],
        allowed_says=f"stand-in {ALLOWED}",
    )
    (path / "tests" / "test.sh").write_text(test_sh)
    return path


ALLOWLIST = f"""\
[environment]
network_mode = "allowlist"
allowed_hosts = ["{ALLOWED}", "*.example.org"]
"""


@pytest.fixture
async def environments(
    tmp_path: Path, machines: Provider
) -> AsyncIterator[list[HarborEnvironment]]:
    made: list[HarborEnvironment] = []
    yield made
    for environment in made:
        await environment.aclose()


def make(
    made: list[HarborEnvironment], folder: Path, machines: Provider, **options: Any
) -> HarborEnvironment:
    environment = HarborEnvironment(str(folder), sandbox=machines.name, **options)
    environment._provider = machines
    made.append(environment)
    return environment


async def seed(environment: HarborEnvironment) -> Session:
    row = task_row("a", environment.tasks["a"])
    return Session("s", row, await environment.seed(row))


async def test_the_allowlisted_host_passes_and_every_other_is_refused_and_counted(
    tmp_path: Path, machines: Provider, stand_ins: dict[str, str], environments: Any
) -> None:
    network_task(tmp_path / "tasks" / "a", stand_ins, ALLOWLIST)
    environment = make(environments, tmp_path / "tasks", machines, network_private="127.0.0.0/8")
    session = await seed(environment)
    try:
        said = await environment.bash(
            session,
            f"cat > /tmp/fetch.py <<'EOF'\n{FETCH}EOF\n"
            f"python3 /tmp/fetch.py http://{stand_ins['allowed']}/ "
            f"http://{stand_ins['other']}/ {stand_ins['allowed']} {stand_ins['other']} "
            "http://localhost:9/",
        )
        assert said.splitlines()[:5] == [
            f"stand-in {ALLOWED}",
            "refused 403",
            f"stand-in {ALLOWED}",  # CONNECT: a tunnel to the allowed host
            "refused OSError",  # the proxy answered 403 to the CONNECT
            "refused URLError",  # the box's own loopback: not sent to the proxy
        ], said
        verdict = await environment.verify(session, {})
    finally:
        await environment.close(session)
    assert (verdict.failure, verdict.reward) == (None, 1.0)
    tally = verdict.metrics[NETWORK_FIELD]
    assert tally["agent"]["allowed"] == {ALLOWED: 2}
    assert tally["agent"]["refused"] == {OTHER: 2}
    assert tally["agent"]["why"] == {OTHER: "not in the task's allowlist"}
    assert tally["verifier"]["allowed"] == {ALLOWED: 1}
    assert tally["verifier"]["refused"] == {OTHER: 1}
    assert verdict.metrics[REFUSED_FIELD] == 3


async def test_an_allowlisted_private_address_is_refused_unless_the_user_allows_it(
    tmp_path: Path, machines: Provider, stand_ins: dict[str, str], environments: Any
) -> None:
    network_task(tmp_path / "tasks" / "a", stand_ins, ALLOWLIST)
    environment = make(environments, tmp_path / "tasks", machines)
    session = await seed(environment)
    try:
        verdict = await environment.verify(session, {})
    finally:
        await environment.close(session)
    assert (verdict.failure, verdict.reward) == (None, 0.0)
    why = verdict.metrics[NETWORK_FIELD]["verifier"]["why"][ALLOWED]
    assert why.startswith(f"leads to {ALLOWED}, which is not a public address")


async def test_each_phase_has_its_own_policy(
    tmp_path: Path, machines: Provider, stand_ins: dict[str, str], environments: Any
) -> None:
    folder = network_task(tmp_path / "tasks" / "a", stand_ins, ALLOWLIST)
    text = (folder / "task.toml").read_text()
    (folder / "task.toml").write_text(
        text.replace("[verifier]\n", '[verifier]\nnetwork_mode = "no-network"\n')
    )
    environment = make(environments, tmp_path / "tasks", machines, network_private="127.0.0.0/8")
    session = await seed(environment)
    try:
        said = await environment.bash(
            session,
            f"cat > /tmp/fetch.py <<'EOF'\n{FETCH}EOF\n"
            f"python3 /tmp/fetch.py http://{stand_ins['allowed']}/",
        )
        assert said.startswith(f"stand-in {ALLOWED}\n"), said
        verdict = await environment.verify(session, {})
    finally:
        await environment.close(session)
    assert (verdict.failure, verdict.reward) == (None, 0.0)  # the tests had no network
    tally = verdict.metrics[NETWORK_FIELD]
    assert tally["agent"]["allowed"] == {ALLOWED: 1}
    assert tally["verifier"]["why"][ALLOWED] == "this phase has no network"


def test_public_is_refused_unless_the_user_opts_in(tmp_path: Path) -> None:
    folder = network_task(
        tmp_path / "tasks" / "a", {"allowed": "x:1", "other": "y:1"}, "[environment]\ncpus = 1\n"
    )
    with pytest.raises(ConfigError, match=r"--env-arg network_public=true"):
        HarborEnvironment(str(folder))
    assert HarborEnvironment(str(folder), network_public=True).tasks


def test_a_bad_private_range_is_one_line(tmp_path: Path) -> None:
    folder = network_task(tmp_path / "tasks" / "a", {"allowed": "x:1", "other": "y:1"}, ALLOWLIST)
    with pytest.raises(ConfigError, match=r"^network_private: 'lan' is not an IP address"):
        HarborEnvironment(str(folder), network_private="10.0.0.0/8,lan")

"""``palaestra serve gateway`` as a user runs it: open a rollout over HTTP, call, read it back."""

from __future__ import annotations

import resource
import urllib.request
from pathlib import Path

import openai
import orjson
import pytest

from tests.cli.test_collect_cli import run_cli
from tests.cli.test_serve_cli import Served, assert_one_line
from tests.support.scripted_model import ScriptedModelServer, text_response


def _post(url: str, token: str, body: bytes = b"{}", method: str = "POST") -> dict[str, object]:
    request = urllib.request.Request(url, data=body, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as answer:
        found = orjson.loads(answer.read())
    assert isinstance(found, dict)
    return found


def test_a_served_gateway_opens_rollouts_and_records_their_calls() -> None:
    with ScriptedModelServer(lambda params: text_response("hi there")) as model:
        served = Served("gateway", "--model", model.url, "--token", "admin-secret")
        try:
            opened = _post(f"{served.url}/admin/rollouts", "admin-secret")
            client = openai.OpenAI(base_url=str(opened["base_url"]), api_key=str(opened["api_key"]))
            answer = client.chat.completions.create(
                model="any", messages=[{"role": "user", "content": "hello"}]
            )
            assert answer.choices[0].message.content == "hi there"
            described = _post(
                f"{served.url}/admin/rollouts/{opened['id']}", "admin-secret", b"", "DELETE"
            )
            calls = described["calls"]
            assert isinstance(calls, list) and [c["api"] for c in calls] == ["chat"]
            assert served.get("/metrics")[0] == 401
            status, text = served.get("/metrics", "admin-secret")
            assert status == 200 and b'palaestra_gateway_calls_total{api="chat"} 1.0' in text
        finally:
            served.stop()


def test_serve_gateway_on_a_busy_port_says_so_in_one_line(tmp_path: Path) -> None:
    import socket

    with (
        ScriptedModelServer(lambda params: text_response("x")) as model,
        socket.create_server(("127.0.0.1", 0)) as holder,
    ):
        port = str(holder.getsockname()[1])
        done = run_cli("serve", "gateway", "--model", model.url, "--port", port, cwd=tmp_path)
    assert_one_line(done, f"cannot listen on 127.0.0.1:{port}: address already in use")


def test_a_served_gateway_lifts_its_open_files_limit_for_a_thousand_calls_at_once() -> None:
    """Each call in flight holds two sockets in the gateway: under a common soft limit of
    1,024 open files, 1,024 concurrent rollouts lost half their calls
    (``benchmarks/gateway_scale.py --nofile 1024``)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 1024:
        pytest.skip(f"the hard limit on open files is {hard}: nothing to lift to")
    with ScriptedModelServer(lambda params: text_response("x")) as model:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
        try:  # the gateway starts with what this process has
            served = Served("gateway", "--model", model.url, "--token", "admin-secret")
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        try:
            limits = Path(f"/proc/{served.process.pid}/limits").read_text()
        finally:
            served.stop()
    line = next(line for line in limits.splitlines() if line.startswith("Max open files"))
    assert int(line.split()[3]) > 1024, line

"""A stack's env server that is a command (``{kind: env, cmd: ...}``, e.g. ``nel serve``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from palaestra.errors import ConfigError
from palaestra.stack.config import load_stack

CMD = "nel serve -b bench.py -p {port}"


def stack(tmp_path: Path, entry: str) -> Path:
    path = tmp_path / "stack.yaml"
    path.write_text(f"servers:\n  bench: {entry}\n  agent: {{kind: agent, env: bench}}\n")
    return path


def test_an_env_entry_with_a_cmd_is_served_as_that_command(tmp_path: Path) -> None:
    config = load_stack(stack(tmp_path, f'{{kind: env, cmd: "{CMD}"}}'))
    spec = config.serve_spec("bench", {}, token=None, environ={})
    assert spec.kind == "env" and spec.env.cmd == CMD and spec.env.name is None
    agent = config.serve_spec("agent", {"bench": "http://127.0.0.1:9"}, token=None, environ={})
    assert agent.env.url == "http://127.0.0.1:9"  # the agent uses it as any env server


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ("{kind: env}", "needs an environment name (or a cmd that starts one)"),
        (f'{{kind: env, env: mcqa, cmd: "{CMD}"}}', "serves env or runs cmd, not both"),
        (f'{{kind: model, cmd: "{CMD}"}}', "field 'servers.bench.cmd': only env servers take it"),
    ],
    ids=["neither", "both", "not-an-env-server"],
)
def test_an_env_entry_needs_exactly_one_of_env_and_cmd(
    tmp_path: Path, entry: str, said: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load_stack(stack(tmp_path, entry))
    assert said in str(raised.value)

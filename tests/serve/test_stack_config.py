from __future__ import annotations

from pathlib import Path

import pytest

from palaestra.errors import ConfigError
from palaestra.serve.stack_config import load_stack, load_token

STACK = """
servers:
  env: {kind: env, env: weather}
  agent: {kind: agent, env: env, model: "http://127.0.0.1:1/v1"}
"""


def test_overrides_apply_on_top_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "stack.yaml"
    path.write_text(STACK)
    config = load_stack(
        path, ["servers.agent.max_steps=3", "host=0.0.0.0", "servers.model={kind: model}"]
    )
    assert config.servers["agent"].max_steps == 3
    assert config.host == "0.0.0.0"
    assert config.start_order()[-1] == "agent"
    with pytest.raises(ConfigError, match=r"field 'servers.agent.max_steps'"):
        load_stack(path, ["servers.agent.max_steps=0"])
    with pytest.raises(ConfigError, match=r"expected dotted\.key=value"):
        load_stack(path, ["max_steps"])


def test_token_from_environment_or_env_yaml_never_echoed(tmp_path: Path) -> None:
    path = tmp_path / "stack.yaml"
    path.write_text(STACK)
    assert load_token(path, {}) is None
    (tmp_path / "env.yaml").write_text("token: from-file\n")
    assert load_token(path, {}) == "from-file"
    assert load_token(path, {"PALAESTRA_SERVER_TOKEN": "from-env"}) == "from-env"
    (tmp_path / "env.yaml").write_text("token: [unclosed secret-value\n")
    with pytest.raises(ConfigError) as error:
        load_token(path, {})
    assert "secret-value" not in str(error.value)

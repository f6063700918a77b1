"""A stack server's ``user_model``: the simulated user's model of the environment it serves."""

from __future__ import annotations

from pathlib import Path

import pytest

from palaestra.errors import ConfigError
from palaestra.stack.config import load_stack

STACK = """
servers:
  airline: {kind: env, env: weather, user_model: customer}
  customer: {kind: model, backend: "http://127.0.0.1:1/v1"}
  inside: {kind: agent, env: weather, model: local, user_model: local}
"""


def test_an_env_server_names_a_model_server_of_the_stack_as_its_user(tmp_path: Path) -> None:
    path = tmp_path / "stack.yaml"
    path.write_text(STACK)
    config = load_stack(path)
    assert config.start_order() == ["customer", "airline", "inside"]  # the model first
    urls = {"customer": "http://127.0.0.1:5555"}
    spec = config.serve_spec("airline", urls, token="t", environ={})
    assert spec.user_model is not None and spec.user_model.url == "http://127.0.0.1:5555/v1"
    assert spec.user_model.api_key_env == "PALAESTRA_SERVER_TOKEN"  # the stack's token
    inside = config.serve_spec("inside", urls, token=None, environ={})
    assert inside.user_model is not None and inside.user_model.backend == "local"
    assert config.serve_spec("customer", urls, token=None, environ={}).user_model is None


def test_a_user_model_that_is_no_model_is_refused_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "stack.yaml"
    path.write_text(STACK.replace("user_model: customer", "user_model: inside"))
    with pytest.raises(ConfigError, match=r"servers.airline.user_model': 'inside' is a agent"):
        load_stack(path)
    path.write_text(STACK.replace("user_model: customer", "user_model: custmer"))
    with pytest.raises(ConfigError, match=r"did you mean 'customer'"):
        load_stack(path)
    path.write_text(STACK.replace("backend:", "user_model: local, backend:"))
    with pytest.raises(ConfigError, match=r"servers.customer.user_model': only env servers"):
        load_stack(path)

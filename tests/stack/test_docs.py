"""Stack files as a user writes them from the docs: every key documented, and a model
backend's option put where a stack server takes none pointed at ``model_options``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from palaestra.errors import ConfigError
from palaestra.stack.config import ServerSpec, StackConfig, load_stack

ROOT = Path(__file__).resolve().parents[2]
STACK_DOCS = ROOT / "docs/stack.md"


def documented_keys() -> set[str]:
    text = STACK_DOCS.read_text(encoding="utf-8")
    return set(re.findall(r"^\| `(\w+)` \|", text, flags=re.MULTILINE))


def test_every_key_a_stack_file_accepts_is_documented() -> None:
    accepted = set(StackConfig.model_fields) | set(ServerSpec.model_fields)
    assert accepted - documented_keys() == set()  # before: no page named any of them
    assert documented_keys() - accepted == set()  # nor a key the file refuses
    assert "stack.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def write_stack(tmp_path: Path, model_server: str) -> Path:
    path = tmp_path / "stack.yaml"
    path.write_text(
        "servers:\n"
        "  env: {kind: env, env: weather}\n"
        f"  smollm: {model_server}\n"
        "  agent: {kind: agent, env: env, model: smollm}\n",
        encoding="utf-8",
    )
    return path


def test_options_on_a_model_server_are_refused_pointing_at_model_options(
    tmp_path: Path,
) -> None:
    path = write_stack(tmp_path, "{kind: model, backend: local, options: {token_mode: true}}")
    with pytest.raises(ConfigError) as refused:
        load_stack(path)
    message = str(refused.value)  # before: "only agent servers take it", and nothing more
    assert message.startswith(f"{path}: field 'servers.smollm.options': ")
    assert "did you mean model_options?" in message and "\n" not in message


def test_a_backend_option_beside_kind_is_refused_pointing_at_model_options(
    tmp_path: Path,
) -> None:
    path = write_stack(tmp_path, "{kind: model, backend: local, token_mode: true}")
    with pytest.raises(ConfigError) as refused:
        load_stack(path)
    assert str(refused.value) == (
        f"{path}: field 'servers.smollm.token_mode': 'token_mode' is an option of the model "
        "backend; did you mean model_options? (model_options: {token_mode: ...})"
    )


def test_a_backend_option_on_an_agent_is_pointed_at_its_model_options(tmp_path: Path) -> None:
    path = write_stack(tmp_path, "{kind: model, backend: local}")
    path.write_text(path.read_text().replace("model: smollm}", "model: smollm, n_ctx: 4096}"))
    with pytest.raises(ConfigError, match=r"'servers\.agent\.n_ctx': .*did you mean model_opt"):
        load_stack(path)


def test_model_options_is_where_token_mode_goes(tmp_path: Path) -> None:
    path = write_stack(tmp_path, "{kind: model, backend: local, model_options: {token_mode: true}}")
    spec = load_stack(path).serve_spec("smollm", {}, token=None, environ={})
    assert spec.model.options == {"token_mode": True}


def test_an_unknown_key_that_is_no_backend_option_keeps_its_own_error(tmp_path: Path) -> None:
    path = write_stack(tmp_path, "{kind: model, backend: local, colour: blue}")
    with pytest.raises(ConfigError, match=r"field 'servers\.smollm\.colour': Extra inputs"):
        load_stack(path)

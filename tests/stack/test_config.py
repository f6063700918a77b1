from __future__ import annotations

from pathlib import Path

import pytest

from palaestra.errors import ConfigError
from palaestra.stack.config import load_stack, load_token

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


def test_an_agent_naming_a_server_that_does_not_exist_is_refused_with_what_it_could_mean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no palaestra_models.yaml here
    path = tmp_path / "stack.yaml"
    path.write_text("""
servers:
  weather_env: {kind: env, env: weather}
  smollm: {kind: model}
  big_model: {kind: model, backend: "http://127.0.0.1:1/v1"}
  agent: {kind: agent, env: weather_env, model: smolm}
""")
    with pytest.raises(ConfigError) as typo:
        load_stack(path)  # before: accepted; the agent died at start looking for 'smolm'
    message = str(typo.value)
    assert "field 'servers.agent.model': 'smolm' is not a model server" in message
    assert "did you mean 'smollm'? its model servers: 'smollm', 'big_model'" in message
    with pytest.raises(ConfigError, match=r"servers.agent.env': 'weather_en' .* 'weather_env'"):
        load_stack(path, ["servers.agent.env=weather_en"])
    alone = tmp_path / "alone.yaml"
    alone.write_text("servers:\n  a: {kind: agent, env: weather, model: smollm}\n")
    with pytest.raises(ConfigError, match=r"'smollm' is not a model .*no model server"):
        load_stack(alone)
    for fine in ("local", "http://127.0.0.1:1/v1", "big_model"):
        assert load_stack(path, [f"servers.agent.model={fine}"]).servers["agent"].model == fine
    for in_process in ("weather", "./my_env.py", "my_package.envs:MyEnv"):
        assert load_stack(path, ["servers.agent.model=smollm", f"servers.agent.env={in_process}"])
    (tmp_path / "palaestra_models.yaml").write_text("smolm: http://127.0.0.1:1/v1\n")
    assert load_stack(path).servers["agent"].model == "smolm"  # a configured model name


def test_env_servers_take_session_caps_and_pass_them_to_serve_env(tmp_path: Path) -> None:
    path = tmp_path / "stack.yaml"
    path.write_text(STACK)
    config = load_stack(path, ["servers.env.max_sessions=64", "servers.env.max_task_bytes=0"])
    spec = config.serve_spec("env", {}, token=None, environ={})
    assert (spec.max_sessions, spec.max_task_bytes) == (64, 0)
    with pytest.raises(ConfigError, match=r"'servers.agent.max_sessions': only env servers"):
        load_stack(path, ["servers.agent.max_sessions=3"])


def test_any_agent_runs_in_a_stack_with_its_options_and_a_wrong_one_is_refused_at_load(
    tmp_path: Path,
) -> None:
    path = tmp_path / "stack.yaml"
    path.write_text("""
servers:
  game: {kind: env, env: number_guess, args: {}}
  smollm: {kind: model, backend: local, model_options: {n_ctx: 2048}}
  player: {kind: agent, env: game, model: smollm, agent: step, options: {max_steps: 3}}
""")
    config = load_stack(path)  # before: 'step' was not one of the two agents a stack allowed
    urls = {"game": "http://127.0.0.1:9001", "smollm": "http://127.0.0.1:9002"}
    player = config.serve_spec("player", urls, token="t0k", environ={"OPENAI_API_KEY": "sk-x"})
    assert (player.agent.name, player.agent.options) == ("step", {"max_steps": 3})
    assert player.env.url == "http://127.0.0.1:9001"
    assert player.model.url == "http://127.0.0.1:9002/v1"
    assert player.model.api_key_env == "PALAESTRA_SERVER_TOKEN"  # the stack's token, not OpenAI's
    assert "t0k" not in player.model_dump_json()
    model = config.serve_spec("smollm", urls, token=None, environ={})
    assert (model.model.backend, model.model.options) == ("local", {"n_ctx": 2048})
    for override, complaint in (
        ("servers.player.options={max_steps: 3, max_calls_per_turn: 2}", "takes no argument"),
        ("servers.player.agent=stepp", "unknown agent 'stepp'"),
        ("servers.game.options={x: 1}", "only agent servers take it"),
        ("servers.smollm.args={x: 1}", "only env servers and agent servers take it"),
    ):
        with pytest.raises(ConfigError) as refused:
            load_stack(path, [override])
        assert f"{path}: field 'servers." in str(refused.value)
        assert complaint in str(refused.value), str(refused.value)


def test_a_stack_may_name_a_pool_of_model_endpoints(tmp_path: Path) -> None:
    path = tmp_path / "stack.yaml"
    urls = ["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"]
    path.write_text(
        "servers:\n"
        "  env: {kind: env, env: weather}\n"
        f"  agent: {{kind: agent, env: env, model: [{urls[0]}, {urls[1]}]}}\n"
        f"  proxy: {{kind: model, backend: [{urls[0]}, {urls[1]}]}}\n"
    )
    config = load_stack(path)
    agent = config.serve_spec("agent", {"env": "http://127.0.0.1:3"}, token=None, environ={})
    proxy = config.serve_spec("proxy", {}, token=None, environ={})
    assert agent.model.urls == urls and proxy.model.urls == urls
    with pytest.raises(ConfigError, match=r"field 'servers.agent.model': a list names the base"):
        load_stack(path, ["servers.agent.model=[local, http://127.0.0.1:1/v1]"])


@pytest.mark.parametrize("name", ["../../evil", "a/b", ".hidden", "", "x" * 129, "two words"])
def test_a_server_name_that_is_not_an_identifier_is_refused_naming_the_file_and_key(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / "stack.yaml"
    path.write_text(f"servers:\n  {name!r}: {{kind: env, env: weather}}\n")
    with pytest.raises(ConfigError) as refused:
        load_stack(path)
    message = str(refused.value)
    assert message.startswith(f"{path}: key {name!r} under 'servers'")
    assert "\n" not in message


def test_a_server_name_with_dots_dashes_and_digits_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "stack.yaml"
    path.write_text("servers:\n  weather-env.v2_1: {kind: env, env: weather}\n")
    assert list(load_stack(path).servers) == ["weather-env.v2_1"]


def test_run_refuses_a_server_named_like_a_path_before_writing_anything(tmp_path: Path) -> None:
    from tests.cli.test_collect_cli import run_cli

    stack = tmp_path / "deep" / "stack.yaml"
    stack.parent.mkdir()
    stack.write_text("servers:\n  ../../evil: {kind: env, env: weather}\n")
    done = run_cli("run", str(stack), cwd=stack.parent)
    assert done.returncode != 0
    assert f"{stack}: key '../../evil' under 'servers'" in done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.rglob("*evil*")) == []


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        (STACK + "  env: {kind: env, env: counter}\n", 5, "servers.env"),
        (
            "servers:\n  env: {kind: env,\n        env: weather, env: counter}\n",
            3,
            "servers.env.env",
        ),
        ("host: 127.0.0.1\nservers: {env: {kind: env, env: weather}}\nhost: 0.0.0.0\n", 3, "host"),
    ],
)
def test_a_key_given_twice_is_refused_naming_the_file_line_and_key(
    tmp_path: Path, text: str, line: int, field: str
) -> None:
    path = tmp_path / "stack.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as refused:  # before: the last one won, silently
        load_stack(path)
    message = str(refused.value)
    assert message.startswith(f"{path}:{line}: field '{field}': given twice (first at line ")
    assert "\n" not in message


@pytest.mark.parametrize("servers", ["servers: {}\n", "host: 127.0.0.1\nservers:\n"])
def test_a_stack_with_no_server_is_refused_in_one_line_by_run(tmp_path: Path, servers: str) -> None:
    from tests.cli.test_collect_cli import run_cli

    (tmp_path / "stack.yaml").write_text(servers)
    done = run_cli("run", "stack.yaml", cwd=tmp_path, timeout=60)  # before: ran forever
    line = servers.count("\n")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"error: stack.yaml:{line}: field 'servers': no server to run; a stack names at least one"
    )


def test_an_agent_server_of_a_stack_is_closed_book_unless_it_says_hosted_tools(
    tmp_path: Path,
) -> None:
    path = tmp_path / "stack.yaml"
    path.write_text(STACK)
    urls = {"env": "http://127.0.0.1:3"}
    closed = load_stack(path).serve_spec("agent", urls, token=None, environ={})
    opened = load_stack(path, ["servers.agent.hosted_tools=true"])
    assert closed.hosted_tools is False
    assert opened.serve_spec("agent", urls, token=None, environ={}).hosted_tools is True
    with pytest.raises(ConfigError, match=r"'servers.env.hosted_tools': only agent servers"):
        load_stack(path, ["servers.env.hosted_tools=true"])

"""``--user-model``: a run names the simulated user's model, and the environment gets it."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import palaestra
from palaestra.cli.options import user_model_config
from palaestra.collection.assembly import opened_user_model
from palaestra.environment.users import LentUserModel
from palaestra.errors import ConfigError
from palaestra.spec import ModelConfig
from palaestra.types import message_text
from tests.cli.test_collect_cli import rows, run_cli
from tests.support.network import free_port
from tests.support.scripted_model import ScriptedModelServer, text_response
from tests.support.user_envs import WhoAmI

USER_ENVS = str(Path(__file__).resolve().parents[1] / "support" / "user_envs.py")
ENV = USER_ENVS + ":WhoAmI"


def said_by_user(row: dict[str, object]) -> list[str]:
    response = row["response"]
    assert isinstance(response, dict)
    return [message_text(i) for i in response["output"] if i.get("role") == "user"]


def one_task(tmp_path: Path) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(orjson.dumps({"responses_create_params": {"input": "hi"}}) + b"\n")
    return path


def test_the_user_model_named_on_the_command_line_reaches_the_environment(tmp_path: Path) -> None:
    with (
        ScriptedModelServer(lambda params: text_response("hello")) as policy,
        ScriptedModelServer(lambda params: text_response("unused")) as user,
    ):
        done = run_cli(
            "collect",
            "--env",
            ENV,
            "--input",
            str(one_task(tmp_path)),
            "--output",
            str(tmp_path / "out.jsonl"),
            "--model",
            policy.url,
            "--user-model",
            user.url,  # reached once when the run starts (a wrong one fails fast)
            "--user-model-name",
            "user-sim",
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    (row,) = rows(tmp_path / "out.jsonl")
    assert said_by_user(row) == ["my model is user-sim"]
    assert row["_palaestra"]["producers"] == ["policy", "user"]
    assert row["_palaestra"]["user_turns"] == 1


async def test_the_python_front_door_takes_a_user_model(tmp_path: Path) -> None:
    with (
        ScriptedModelServer(lambda params: text_response("hello")) as policy,
        ScriptedModelServer(lambda params: text_response("unused")) as user,
    ):
        summary = await palaestra.collect_async(
            env=WhoAmI,
            input=one_task(tmp_path),
            output=tmp_path / "out.jsonl",
            model=policy.url,
            user_model=ModelConfig(url=user.url, model="py-user"),
        )
    assert summary.scored == 1
    (row,) = rows(tmp_path / "out.jsonl")
    assert said_by_user(row) == ["my model is py-user"]


async def test_without_a_user_model_the_environment_is_told_none(tmp_path: Path) -> None:
    with ScriptedModelServer(lambda params: text_response("hello")) as policy:
        await palaestra.collect_async(
            env=WhoAmI, input=one_task(tmp_path), output=tmp_path / "o.jsonl", model=policy.url
        )
    (row,) = rows(tmp_path / "o.jsonl")
    assert said_by_user(row) == ["my model is none"]


async def test_the_policy_model_named_again_as_user_model_is_the_same_object() -> None:
    from tests.support.fake_model import FakeModel, say

    policy = FakeModel(lambda params: say("x"))
    local = ModelConfig(backend="local", sampling={"temperature": 0.7})
    async with opened_user_model(ModelConfig(backend="local"), (local, policy)) as user:
        assert isinstance(user, LentUserModel)
        assert user.model is policy  # the embedded model is loaded once, not twice
    async with opened_user_model(None, (local, policy)) as user:
        assert user is None


def test_user_model_flags_resolve_as_model_flags_do() -> None:
    assert user_model_config({"user_model_spec": ()}) is None
    same = user_model_config(
        {"user_model_spec": ("local",), "model_spec": ("local",), "model_options": ("n_ctx=4096",)}
    )
    assert same is not None and same.backend == "local" and same.options == {"n_ctx": 4096}
    other = user_model_config({"user_model_spec": ("http://h:1/v1",), "model_spec": ("local",)})
    assert other is not None and other.url == "http://h:1/v1" and other.backend == "openai"
    with pytest.raises(ConfigError, match="--user-model-name needs --user-model"):
        user_model_config({"user_model_name": "x"})


async def test_a_user_model_for_a_served_environment_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="its user model is its server's"):
        await palaestra.collect_async(
            env_url="http://127.0.0.1:9", user_model="local", output=tmp_path / "o.jsonl"
        )


async def test_serve_env_opens_its_own_user_model_and_announces_its_user() -> None:
    from palaestra import ToolCallingAgent
    from palaestra.remote.env import RemoteEnvironmentClient
    from tests.cli.test_serve_cli import Served
    from tests.support.fake_model import FakeModel, say

    with ScriptedModelServer(lambda params: text_response("unused")) as user:
        served = Served("env", ENV, "--user-model", user.url, "--user-model-name", "served-user")
        try:
            remote = await RemoteEnvironmentClient.connect(served.url)
            try:
                assert remote.has_user
                task = {"responses_create_params": {"input": "hi"}}
                result = await ToolCallingAgent().run(task, remote, FakeModel(lambda p: say("x")))
            finally:
                await remote.aclose()
        finally:
            served.stop()
    assert result.failure is None and result.response is not None
    assert said_by_user({"response": result.response}) == ["my model is served-user"]


def test_an_embedded_user_model_runs_one_conversation_at_a_time_by_default() -> None:
    from palaestra.run.collect import default_concurrency, run_spec

    remote = "http://127.0.0.1:9/v1"
    assert default_concurrency(run_spec(env="weather", model=remote, user_model="local")) == 1
    assert default_concurrency(run_spec(env="weather", model=remote, user_model=remote)) == 16


def collect_with_user_model(tmp_path: Path, env: str, user: str, policy: str) -> tuple[int, str]:
    done = run_cli(
        "collect", "--env", env, "--input", str(one_task(tmp_path)),
        "--output", str(tmp_path / "out.jsonl"), "--model", policy, "--user-model", user,
        cwd=tmp_path,
    )  # fmt: skip
    return done.returncode, done.stderr


def test_a_user_model_out_of_reach_is_named_with_its_url(tmp_path: Path) -> None:
    user = f"http://127.0.0.1:{free_port()}/v1"
    with ScriptedModelServer(lambda params: text_response("hello")) as policy:
        code, shown = collect_with_user_model(tmp_path, ENV, user, policy.url)
        assert policy.bodies("/v1/responses") == []  # refused before any rollout
    assert code == 1, shown
    (line,) = shown.splitlines()
    assert line.startswith("error: the user model is unreachable: ") and user in line


def test_a_user_model_that_rejects_the_key_is_named_with_its_url(tmp_path: Path) -> None:
    with (
        ScriptedModelServer(lambda params: text_response("hello")) as policy,
        ScriptedModelServer(lambda params: text_response("hi"), api_key="not-ours") as user,
    ):
        code, shown = collect_with_user_model(tmp_path, ENV, user.url, policy.url)
    assert code == 1, shown
    (line,) = shown.splitlines()
    assert line.startswith("error: the user model: the endpoint rejected the API key (401)")
    assert user.url in line


async def test_a_user_model_option_it_cannot_take_is_named_with_its_url(tmp_path: Path) -> None:
    user = ModelConfig(url="http://127.0.0.1:9/v1", options={"no_such_option": 1})
    with pytest.raises(ConfigError) as refused:
        async with opened_user_model(user):
            pass
    message = str(refused.value)
    assert (
        message.startswith("the user model at http://127.0.0.1:9/v1: ")
        and "no_such_option" in message
    )


async def test_a_user_model_that_answers_nothing_fails_its_rollout_naming_it_and_its_url(
    tmp_path: Path,
) -> None:
    with (
        ScriptedModelServer(lambda params: text_response("hello")) as policy,
        ScriptedModelServer(lambda params: text_response("  ")) as user,
    ):
        await palaestra.collect_async(
            env=USER_ENVS + ":ModelInterview", input=one_task(tmp_path),
            output=tmp_path / "o.jsonl", model=policy.url, user_model=user.url,
        )  # fmt: skip
    (failure,) = rows(tmp_path / "o_failures.jsonl")
    assert failure["failure"]["kind"] == "user_model_error"
    assert failure["failure"]["reason"] == f"the user model at {user.url} answered nothing"


def test_a_user_model_for_an_environment_without_a_user_is_refused_unprobed(
    tmp_path: Path,
) -> None:
    with (
        ScriptedModelServer(lambda params: text_response("hello")) as policy,
        ScriptedModelServer(lambda params: text_response("hi")) as user,
    ):
        code, shown = collect_with_user_model(tmp_path, "counter", user.url, policy.url)
        assert user.requests == [] and policy.requests == []  # never reached
    assert code == 1
    assert shown.splitlines() == ["error: --user-model: environment counter has no simulated user"]


def test_an_evaluation_gives_the_user_model_only_to_environments_with_a_user(
    tmp_path: Path,
) -> None:
    from palaestra.run.eval import plan

    user = "http://127.0.0.1:9/v1"
    planned = plan(["counter", ENV], user_model=user, output_dir=tmp_path)
    given = {name: spec.user_model for name, spec in planned.runs}
    assert given["counter"] is None
    (with_user,) = [config for name, config in given.items() if name != "counter"]
    assert with_user is not None and with_user.url == user
    with pytest.raises(
        ConfigError,
        match=r"^--user-model: none of the environments \(counter, weather\) has a simulated user$",
    ):
        plan(["counter", "weather"], user_model=user, output_dir=tmp_path)
    with pytest.raises(
        ConfigError, match=r"^--user-model: environment counter has no simulated user$"
    ):
        plan(["counter"], user_model=user, output_dir=tmp_path)

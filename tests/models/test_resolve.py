"""open_model: local, URLs, named config entries; and Responses/chat auto-detection."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import types
from pathlib import Path

import pytest

from palaestra.errors import ConfigError
from palaestra.models import (
    ModelConfig,
    OpenAIChatModel,
    OpenAIResponsesModel,
    RetryPolicy,
    model_config,
    open_model,
)
from palaestra.models.openai.auto_api import AutoApiModel
from palaestra.models.openai.retry import ModelHttpError
from palaestra.types import output_text
from tests.support.fake_model import FakeModel, say
from tests.support.scripted_model import ScriptedFault, ScriptedModelServer, text_response

FAST = RetryPolicy(max_retries=1, base_delay=0.01, max_delay=0.05)
URL = "http://127.0.0.1:9/v1"


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "models.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# --- what a spec resolves to ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("api", "kind"),
    [("responses", OpenAIResponsesModel), ("chat", OpenAIChatModel), ("auto", AutoApiModel)],
)
def test_a_url_opens_the_client_of_its_api(api: str, kind: type) -> None:
    model = open_model(URL, api=api, model_name="m")  # type: ignore[arg-type]
    assert isinstance(model, kind)
    assert model.name == "m"


def test_local_imports_the_local_model_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("palaestra.models.local.model")

    class LocalModel(FakeModel):
        @classmethod
        def from_config(cls, config: ModelConfig, *, http: object = None) -> LocalModel:
            return cls(lambda _: say("local"))

    fake.LocalModel = LocalModel  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "palaestra.models.local.model", fake)
    assert isinstance(open_model("local"), LocalModel)


def test_importing_the_models_package_or_the_local_subpackage_does_not_load_llama_cpp() -> None:
    code = "import sys, palaestra.models.local; print('llama_cpp' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr


async def test_a_named_entry_opens_its_url_api_model_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PALAESTRA_TEST_KEY", "sk-from-env")
    with ScriptedModelServer(lambda _: text_response("hi"), api="chat") as server:
        config = write_config(
            tmp_path,
            f"mine:\n  url: {server.url}\n  api: chat\n  model: tiny\n"
            "  api_key_env: PALAESTRA_TEST_KEY\n",
        )
        model = open_model("mine", config_path=config, retry=FAST)
        try:
            assert isinstance(model, OpenAIChatModel)
            await model.respond({"input": "x"})
        finally:
            await model.aclose()
        [body] = server.bodies("/v1/chat/completions")
        assert server.authorizations == ["Bearer sk-from-env"]
    assert body["model"] == "tiny"


def test_arguments_win_over_the_entry(tmp_path: Path) -> None:
    config = write_config(tmp_path, f"mine:\n  url: {URL}\n  api: chat\n  model: tiny\n")
    model = open_model("mine", api="responses", model_name="big", config_path=config)
    assert isinstance(model, OpenAIResponsesModel)
    assert model.name == "big"


def test_a_bare_url_entry_is_enough(tmp_path: Path) -> None:
    config = write_config(tmp_path, f"short: {URL}\n")
    model = open_model("short", config_path=config)
    assert isinstance(model, AutoApiModel)
    assert model.endpoint.base_url == URL


def test_the_default_config_file_is_read_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "palaestra_models.yaml").write_text(f"here: {URL}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert isinstance(open_model("here"), AutoApiModel)


def test_an_unknown_name_lists_what_was_tried(tmp_path: Path) -> None:
    config = write_config(tmp_path, f"alpha: {URL}\nbeta: {URL}\n")
    with pytest.raises(ConfigError) as caught:
        open_model("gamma", config_path=config)
    message = str(caught.value)
    assert "'gamma'" in message and "http(s) URL" in message and "'local'" in message
    assert str(config) in message
    assert "alpha, beta" in message
    assert "\n" not in message


def test_a_missing_config_file_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"palaestra_models\.yaml does not exist"):
        open_model("gpt")


@pytest.mark.parametrize(
    ("entry", "complaint"),
    [
        (f"m:\n  url: {URL}\n  api: grpc\n", "api must be one of"),
        (f"m:\n  url: {URL}\n  apikey: x\n", "unknown keys"),
        ("m:\n  url: ftp://host\n", "http\\(s\\) URL"),
        ("m: [1, 2]\n", "must be a URL, a list of URLs or a mapping"),
        (f"m:\n  url: {URL}\n  api_key_env: PALAESTRA_SURELY_UNSET_VARIABLE\n", "is not set"),
        ("m: {url: [unclosed\n", "cannot read model config"),
    ],
)
def test_bad_entries_are_config_errors(tmp_path: Path, entry: str, complaint: str) -> None:
    config = write_config(tmp_path, entry)
    with pytest.raises(ConfigError, match=complaint):
        open_model("m", config_path=config)


def test_a_bad_api_argument_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="api must be one of"):
        open_model(URL, api="graphql")  # type: ignore[arg-type]


# --- model_config: what a user wrote, as one ModelConfig --------------------------------------


def test_an_entry_may_name_a_backend_and_its_options_and_arguments_merge_in(
    tmp_path: Path,
) -> None:
    config = write_config(
        tmp_path,
        "long:\n  backend: local\n  model: tiny\n  options: {n_ctx: 8192, seed: 1}\n",
    )
    resolved = model_config("long", config_path=config, options={"seed": 2})
    assert resolved.backend == "local" and resolved.model == "tiny"
    assert resolved.options == {"n_ctx": 8192, "seed": 2}


def test_a_name_in_the_config_file_wins_over_a_backend_of_that_name(tmp_path: Path) -> None:
    config = write_config(tmp_path, f"local: {URL}\n")
    assert model_config("local", config_path=config).backend == "openai"
    assert model_config("local").backend == "local"


def test_arguments_become_fields_and_the_entry_fills_the_rest(tmp_path: Path) -> None:
    config = write_config(
        tmp_path, f"m:\n  url: {URL}\n  api: chat\n  max_retries: 9\n  sampling: {{top_p: 0.5}}\n"
    )
    resolved = model_config(
        "m",
        config_path=config,
        api="auto",
        api_key_env="MY_KEY",
        request_timeout=5.0,
        sampling={"temperature": 0.0},
    )
    assert (resolved.api, resolved.max_retries, resolved.request_timeout) == ("chat", 9, 5.0)
    assert resolved.api_key_env == "MY_KEY"
    assert resolved.sampling == {"top_p": 0.5, "temperature": 0.0}


@pytest.mark.parametrize(
    ("entry", "complaint"),
    [
        (f"m:\n  url: {URL}\n  api_key: sk-x\n", "name the variable that holds the key"),
        (f"m:\n  url: {URL}\n  max_retries: -1\n", "'max_retries': Input should be greater"),
        (f"m:\n  url: {URL}\n  sampling: {{seed: 1}}\n", "sampling may set temperature, top_p"),
        ("m:\n  backend: openai\n", "'url' must be an http\\(s\\) URL, not None"),
    ],
)
def test_a_bad_entry_is_one_line_naming_the_file_and_the_entry(
    tmp_path: Path, entry: str, complaint: str
) -> None:
    config = write_config(tmp_path, entry)
    with pytest.raises(ConfigError, match=complaint) as caught:
        model_config("m", config_path=config)
    assert str(caught.value).startswith(f"{config}: model 'm': ")
    assert "\n" not in str(caught.value)


def test_a_bad_argument_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="sampling may set temperature, top_p, max_output"):
        model_config(URL, sampling={"seed": 1})
    with pytest.raises(ConfigError, match="'request_timeout': Input should be greater than 0"):
        model_config(URL, request_timeout=0)


def test_a_given_config_file_that_does_not_exist_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"the given model config .*nope\.yaml does not exist"):
        model_config("local", config_path=tmp_path / "nope.yaml")


# --- auto-detection -------------------------------------------------------------------------


async def test_auto_switches_to_chat_once_when_responses_is_missing() -> None:
    with ScriptedModelServer(lambda _: text_response("via chat"), api="chat") as server:
        model = open_model(server.url, model_name="m", retry=FAST)
        assert isinstance(model, AutoApiModel)
        try:
            first = await model.respond({"input": "a"})
            second = await model.respond({"input": "b"})
        finally:
            await model.aclose()
        routes = [route for route, _ in server.requests]
    assert routes == ["/v1/responses", "/v1/chat/completions", "/v1/chat/completions"]
    assert output_text(first) == output_text(second) == "via chat"
    assert model.api == "chat"
    assert model.stats.failures == 0


async def test_auto_stays_on_responses_when_it_works() -> None:
    with ScriptedModelServer(lambda _: text_response("native")) as server:
        model = AutoApiModel(
            ModelConfig(url=server.url, model="m", max_retries=1, retry_delay=0.01)
        )
        try:
            await model.respond({"input": "a"})
            await model.respond({"input": "b"})
        finally:
            await model.aclose()
        routes = [route for route, _ in server.requests]
    assert routes == ["/v1/responses", "/v1/responses"]
    assert model.api == "responses"


async def test_concurrent_first_calls_detect_only_once() -> None:
    with ScriptedModelServer(lambda _: text_response("ok"), api="chat") as server:
        model = AutoApiModel(
            ModelConfig(url=server.url, model="m", max_retries=1, retry_delay=0.01)
        )
        try:
            answers = await asyncio.gather(*(model.respond({"input": str(n)}) for n in range(6)))
        finally:
            await model.aclose()
        routes = [route for route, _ in server.requests]
    assert len(answers) == 6
    assert routes.count("/v1/responses") == 1
    assert routes.count("/v1/chat/completions") == 6


async def test_a_404_about_the_model_is_not_a_missing_route() -> None:
    no_model = ScriptedFault(
        status=404, body={"error": {"message": "The model `nope` does not exist."}}
    )
    with ScriptedModelServer(lambda _: no_model) as server:
        model = AutoApiModel(
            ModelConfig(url=server.url, model="nope", max_retries=1, retry_delay=0.01)
        )
        try:
            with pytest.raises(ModelHttpError, match="does not exist"):
                await model.respond({"input": "x"})
        finally:
            await model.aclose()
        routes = [route for route, _ in server.requests]
    assert routes == ["/v1/responses"]
    assert model.api is None

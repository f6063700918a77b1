"""The head server over real HTTP: palaestra's listing and NeMo Gym's discovery routes."""

from __future__ import annotations

import urllib.error
import urllib.request

import orjson
import pytest
import yaml

from palaestra.http.guard import Guard
from palaestra.http.runner import BackgroundServer
from palaestra.stack.head import head_app
from palaestra.types import JsonDict

SERVERS: list[JsonDict] = [
    {"name": "weather_env", "kind": "env", "url": "http://127.0.0.1:4101", "pid": 11},
    {"name": "smollm", "kind": "model", "url": "http://127.0.0.1:4102", "pid": 12},
    {"name": "weather_agent", "kind": "agent", "url": "http://127.0.0.1:4103", "pid": 13},
    {"name": "late", "kind": "env", "url": None, "pid": 14, "status": "starting"},
]


def get(url: str, token: str | None = None) -> object:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as got:
        return orjson.loads(got.read())


def test_the_global_config_is_yaml_in_a_json_string_naming_each_server_as_nemo_gym_does() -> None:
    with BackgroundServer(head_app(lambda: SERVERS, stack="stack.yaml")) as head:
        text = get(f"{head.url}/global_config_dict_yaml")
    assert isinstance(text, str)  # NeMo Gym does json.loads, then OmegaConf.create on the text
    config = yaml.safe_load(text)
    assert config["head_server"] == {"host": "127.0.0.1", "port": head.port}
    assert config["weather_agent"]["responses_api_agents"]["palaestra_agent"] == {
        "host": "127.0.0.1",
        "port": 4103,
        "url": "http://127.0.0.1:4103",
    }
    assert config["weather_env"]["resources_servers"]["palaestra_env"]["port"] == 4101
    assert config["smollm"]["responses_api_models"]["palaestra_model"]["port"] == 4102
    assert "late" not in config  # no address yet: nothing a client could reach


def test_server_instances_list_every_server_with_the_fields_ng_status_reads() -> None:
    with BackgroundServer(head_app(lambda: SERVERS, stack="stack.yaml")) as head:
        listed = get(f"{head.url}/server_instances")
    assert isinstance(listed, list) and len(listed) == 4
    agent = next(i for i in listed if i["process_name"] == "weather_agent")
    assert agent["server_type"] == "responses_api_agents" and agent["name"] == "palaestra_agent"
    assert (agent["host"], agent["port"], agent["pid"]) == ("127.0.0.1", 4103, 13)
    assert agent["url"] == "http://127.0.0.1:4103" and isinstance(agent["start_time"], float)
    late = next(i for i in listed if i["process_name"] == "late")
    assert late["url"] is None and late["port"] is None


@pytest.mark.parametrize("path", ["/global_config_dict_yaml", "/server_instances", "/servers"])
def test_behind_a_token_the_discovery_routes_need_it_too(path: str) -> None:
    app = Guard(head_app(lambda: SERVERS, stack="stack.yaml"), token="head-secret")
    with BackgroundServer(app) as head:
        with pytest.raises(urllib.error.HTTPError) as refused:
            get(f"{head.url}{path}")
        assert refused.value.code == 401
        assert get(f"{head.url}{path}", token="head-secret")

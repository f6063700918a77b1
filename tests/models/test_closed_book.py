"""Closed-book routes: a run of an environment without network sends no provider-hosted tool.

The end-to-end tests run ``palaestra.collect`` over real HTTP against a scripted Responses
server that records every request body, so what is asserted is what the provider received.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import orjson
import pytest

from palaestra import Environment, Session, collect, tool
from palaestra.errors import ConfigError
from palaestra.models.closed_book import without_hosted_tools
from palaestra.types import JsonDict
from tests.cli.test_collect_cli import rows, weather_script
from tests.support.scripted_model import ScriptedModelServer

WEATHER_TOOL: JsonDict = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
    "strict": False,
}
HOSTED: list[JsonDict] = [
    {"type": "web_search_preview"},
    {"type": "file_search", "vector_store_ids": ["vs_1"]},
    {"type": "code_interpreter", "container": {"type": "auto"}},
    {"type": "mcp", "server_label": "x", "server_url": "https://example.invalid/mcp"},
]


class Offline(Environment):
    """Weather from a tool; its tasks have no network (the default)."""

    @tool
    def get_weather(self, city: str) -> str:
        """The weather in a city.

        Args:
            city: The city.
        """
        return f"cold in {city}"

    def verify(self, session: Session, response: JsonDict) -> float:
        return 1.0


class Online(Offline):
    """The same, for tasks that may use the network."""

    network: ClassVar[bool] = True


def hosted_task(path: Path) -> Path:
    """A task that names the environment's tool and, beside it, hosted tools."""
    row = {
        "responses_create_params": {
            "input": [{"role": "user", "content": "Weather in Paris?"}],
            "tools": [WEATHER_TOOL, *HOSTED],
            "tool_choice": {"type": "web_search_preview"},
            "include": ["web_search_call.action.sources", "message.output_text.logprobs"],
        }
    }
    path.write_bytes(orjson.dumps(row) + b"\n")
    return path


def sent_tool_types(server: ScriptedModelServer) -> list[list[str]]:
    return [[t["type"] for t in body.get("tools", [])] for body in server.bodies("/v1/responses")]


def test_a_request_keeps_only_the_tools_the_harness_runs() -> None:
    params: JsonDict = {
        "input": "hi",
        "tools": [WEATHER_TOOL, *HOSTED, {"type": "custom", "name": "grammar"}],
        "tool_choice": {"type": "file_search"},
        "include": ["file_search_call.results", "reasoning.encrypted_content"],
        "web_search_options": {},
    }
    sent, dropped = without_hosted_tools(params)
    assert [tool["type"] for tool in sent["tools"]] == ["function", "custom"]
    assert "tool_choice" not in sent and "web_search_options" not in sent
    assert sent["include"] == ["reasoning.encrypted_content"]
    assert dropped == [
        "web_search_preview",
        "file_search",
        "code_interpreter",
        "mcp",
        "web_search_options",
    ]
    assert len(params["tools"]) == 6  # the caller's params are not changed


def test_an_allowed_tools_choice_keeps_the_harness_tools_and_a_plain_request_is_untouched() -> None:
    choice = {"type": "allowed_tools", "mode": "auto", "tools": [WEATHER_TOOL, *HOSTED]}
    sent, _ = without_hosted_tools({"tools": [WEATHER_TOOL, *HOSTED], "tool_choice": choice})
    assert sent["tool_choice"]["tools"] == [WEATHER_TOOL]
    plain: JsonDict = {"input": "hi", "tools": [WEATHER_TOOL], "tool_choice": "required"}
    assert without_hosted_tools(plain) == (plain, [])


def test_a_run_without_network_sends_no_hosted_tool_and_its_rows_say_closed_book(
    tmp_path: Path,
) -> None:
    with ScriptedModelServer(weather_script()) as server:
        summary = collect(
            env=Offline,
            model=server.url,
            input=hosted_task(tmp_path / "tasks.jsonl"),
            output=tmp_path / "out.jsonl",
            repeats=2,
        )
        sent = sent_tool_types(server)
        bodies = server.bodies("/v1/responses")
    assert summary.scored == 2
    assert sent == [["function"]] * 4  # two model calls per rollout, each closed-book
    assert all("tool_choice" not in body for body in bodies)
    assert all(body["include"] == ["message.output_text.logprobs"] for body in bodies)
    for row in rows(tmp_path / "out.jsonl"):
        assert row["_palaestra"]["closed_book"] is True
        assert row["_palaestra"]["hosted_tools_dropped"] == [t["type"] for t in HOSTED]
    run = orjson.loads((tmp_path / "out_run.json").read_bytes())
    assert run["closed_book"] is True and run["spec"]["collection"]["hosted_tools"] is False


def test_a_run_that_opts_in_sends_the_hosted_tools_and_a_resume_cannot_mix_the_two(
    tmp_path: Path,
) -> None:
    tasks = hosted_task(tmp_path / "tasks.jsonl")
    with ScriptedModelServer(weather_script()) as server:
        collect(env=Offline, model=server.url, input=tasks, output=tmp_path / "o.jsonl", repeats=1)
        opened = collect(
            env=Offline,
            model=server.url,
            input=tasks,
            output=tmp_path / "open.jsonl",
            hosted_tools=True,
        )
        sent = sent_tool_types(server)
        with pytest.raises(
            ConfigError, match="closed_book: the run has true, this command has false"
        ):
            collect(
                env=Offline,
                model=server.url,
                input=tasks,
                output=tmp_path / "o.jsonl",
                repeats=1,
                resume=True,
                hosted_tools=True,
            )
    assert opened.scored == 1
    everything = ["function", *(t["type"] for t in HOSTED)]
    assert sent[2:] == [everything, everything]
    [row] = rows(tmp_path / "open.jsonl")
    assert row["_palaestra"]["closed_book"] is False
    assert "hosted_tools_dropped" not in row["_palaestra"]


def test_an_environment_that_declares_network_gets_the_tools_its_task_names(
    tmp_path: Path,
) -> None:
    with ScriptedModelServer(weather_script()) as server:
        collect(
            env=Online,
            model=server.url,
            input=hosted_task(tmp_path / "tasks.jsonl"),
            output=tmp_path / "out.jsonl",
        )
        sent = sent_tool_types(server)
    assert sent[0] == ["function", *(t["type"] for t in HOSTED)]
    [row] = rows(tmp_path / "out.jsonl")
    assert row["_palaestra"]["closed_book"] is False

"""The gateway over real HTTP, driven by OpenAI's own client, in front of a scripted model
reached over HTTP (``tests.support.scripted_model``): the three APIs, streamed and whole, tool
calls, continuation and branches, secrets, and errors."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import aiohttp
import openai
import pytest

from palaestra.gateway import Gateway, GatewayRollout
from palaestra.models.affinity import RolloutScope
from palaestra.models.chat_format import responses_to_chat
from palaestra.models.openai.chat import OpenAIChatModel
from palaestra.models.openai.responses import OpenAIResponsesModel
from palaestra.models.versions import PolicyClock
from palaestra.training.tree import call_tree
from palaestra.types import JsonDict
from tests.support.open_responses import response_problems, stream_problems
from tests.support.scripted_model import ScriptedModelServer, text_response, tool_call_response

WEATHER_TOOL: JsonDict = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def _weather(params: JsonDict) -> JsonDict:
    """A tool call first, then the answer once the tool's output is in the input."""
    items = params["input"] if isinstance(params["input"], list) else []
    if any(item.get("type") == "function_call_output" for item in items):
        return text_response("It is sunny in Paris.")
    if params.get("tools"):
        return tool_call_response("get_weather", '{"city": "Paris"}', call_id="call_w1")
    return text_response("Hello from the model.")


@pytest.fixture(scope="module")
def scripted() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(_weather) as server:
        yield server


@pytest.fixture
async def gateway(scripted: ScriptedModelServer) -> AsyncIterator[Gateway]:
    model = OpenAIResponsesModel(scripted.url)
    try:
        async with Gateway(model, admin_token="admin-secret") as running:
            yield running
    finally:
        await model.aclose()


def _client(rollout: GatewayRollout) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=rollout.base_url, api_key=rollout.api_key, max_retries=0)


def _ask() -> list[JsonDict]:
    return [
        {"role": "system", "content": "You are a weather bot."},
        {"role": "user", "content": "What is the weather in Paris?"},
    ]


async def test_a_tool_call_round_trip_over_chat_completions_is_one_continued_trajectory(
    gateway: Gateway, scripted: ScriptedModelServer
) -> None:
    rollout = gateway.open()
    client = _client(rollout)
    messages = _ask()
    first = await client.chat.completions.create(
        model="whatever-the-harness-says", messages=messages, tools=[WEATHER_TOOL]
    )
    call = first.choices[0].message.tool_calls[0]
    assert (call.id, call.function.name, call.function.arguments) == (
        "call_w1",
        "get_weather",
        '{"city": "Paris"}',
    )
    assert first.choices[0].finish_reason == "tool_calls"
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": "call_w1", "content": "sunny, 24C"})
    second = await client.chat.completions.create(
        model="x", messages=messages, tools=[WEATHER_TOOL]
    )
    assert second.choices[0].message.content == "It is sunny in Paris."
    assert second.model == gateway.model_id

    assert [c.parent for c in rollout.calls] == [None, 0]
    assert [c.api for c in rollout.calls] == ["chat", "chat"]
    # The model got the call it made itself (its own item id), not the harness' copy.
    sent = scripted.bodies("/v1/responses")[-1]
    assert "model" not in sent or sent["model"] != "x"
    assert [i.get("id") for i in sent["input"] if i.get("type") == "function_call"] == [
        "fc_call_w1"
    ]
    trajectory = rollout.response()
    kinds = [(i.get("type", "message"), i.get("role"), i["producer"]) for i in trajectory["output"]]
    assert kinds == [
        ("message", "system", "environment"),
        ("message", "user", "environment"),
        ("function_call", None, "policy"),
        ("function_call_output", None, "tool"),
        ("message", "assistant", "policy"),
    ]
    assert rollout.producers == [k[2] for k in kinds]
    assert trajectory["usage"]["total_tokens"] == 30


async def test_a_rollout_opened_on_an_agent_s_scope_records_its_policy_clock(
    gateway: Gateway,
) -> None:
    """An agent opens its harness's rollout on its context's scope (``open(scope=...)``): the
    calls are versioned by that scope's clock (a trainer's) and recorded in the scope."""
    clock = PolicyClock(7)
    scope = RolloutScope(clock=clock)
    rollout = gateway.open(scope=scope)
    client = _client(rollout)
    await client.chat.completions.create(model="m", messages=_ask())
    clock.version = 8  # the trainer's weights were updated between two calls
    await client.chat.completions.create(model="m", messages=_ask())
    assert [call.policy_version for call in rollout.calls] == [7, 8]
    assert scope.versions == [7, 8]


async def test_an_edited_history_starts_a_new_branch(gateway: Gateway) -> None:
    rollout = gateway.open()
    client = _client(rollout)
    await client.chat.completions.create(model="m", messages=_ask())
    edited = _ask()
    edited[1]["content"] = "What is the weather in Rome?"
    await client.chat.completions.create(model="m", messages=edited)
    continued = [*_ask(), {"role": "assistant", "content": "Hello from the model."}]
    continued.append({"role": "user", "content": "Thanks."})
    await client.chat.completions.create(model="m", messages=continued)
    retried = await client.chat.completions.create(model="m", messages=_ask())
    assert retried.choices[0].message.content == "Hello from the model."
    # The third call continues the first; a retry of the first call is its sibling (a root).
    assert [c.parent for c in rollout.calls] == [None, None, 0, None]
    # A root brings its whole input; a continuation only what is new (one user message).
    assert len(rollout.response()["output"]) == (2 + 1) + (2 + 1) + (1 + 1) + (2 + 1)


async def test_streamed_chat_answers_are_chunks_ending_with_done(gateway: Gateway) -> None:
    rollout = gateway.open()
    client = _client(rollout)
    chunks = [
        chunk
        async for chunk in await client.chat.completions.create(
            model="m",
            messages=_ask(),
            tools=[WEATHER_TOOL],
            stream=True,
            stream_options={"include_usage": True},
        )
    ]
    assert {chunk.object for chunk in chunks} == {"chat.completion.chunk"}
    calls = [
        c for chunk in chunks for choice in chunk.choices for c in choice.delta.tool_calls or ()
    ]
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
        ("call_w1", "get_weather", '{"city": "Paris"}')
    ]
    assert [ch.finish_reason for chunk in chunks for ch in chunk.choices][-1] == "tool_calls"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 15
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{rollout.base_url}/chat/completions",
            json={"messages": _ask(), "stream": True},
            headers={"Authorization": f"Bearer {rollout.api_key}"},
        ) as answer,
    ):
        assert answer.headers["content-type"] == "text/event-stream"
        raw = await answer.text()
    assert raw.endswith("data: [DONE]\n\n") and '"content":"Hello from the model."' in raw
    assert [c.stream for c in rollout.calls] == [True, True]


async def test_streamed_responses_are_typed_events_from_created_to_completed(
    gateway: Gateway,
) -> None:
    rollout = gateway.open()
    client = _client(rollout)
    async with client.responses.stream(model="m", input="Say hello.") as stream:
        kinds = [event.type async for event in stream]
        final = await stream.get_final_response()
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds
    assert final.output_text == "Hello from the model."
    assert rollout.calls[0].api == "responses" and rollout.calls[0].stream


async def test_the_responses_api_continues_a_previous_response(gateway: Gateway) -> None:
    rollout = gateway.open()
    client = _client(rollout)
    tools = [
        {
            "type": "function",
            "name": "get_weather",
            "parameters": WEATHER_TOOL["function"]["parameters"],
        }
    ]  # type: ignore[index]
    first = await client.responses.create(model="m", input="Weather in Paris?", tools=tools)
    call = first.output[0]
    assert call.type == "function_call"
    second = await client.responses.create(
        model="m",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
        tools=tools,
    )
    assert second.output_text == "It is sunny in Paris."
    assert [c.parent for c in rollout.calls] == [None, 0]


async def test_legacy_completions_answer_text_whole_and_streamed(gateway: Gateway) -> None:
    rollout = gateway.open()
    client = _client(rollout)
    whole = await client.completions.create(model="m", prompt="Once upon a time")
    assert whole.choices[0].text == "Hello from the model."
    streamed = [
        c async for c in await client.completions.create(model="m", prompt="Hi", stream=True)
    ]
    assert "".join(c.choices[0].text for c in streamed) == "Hello from the model."
    assert streamed[-1].choices[0].finish_reason == "stop"
    assert [c.api for c in rollout.calls] == ["completions", "completions"]


async def test_a_rollout_needs_its_own_secret_and_is_gone_once_closed(gateway: Gateway) -> None:
    rollout, other = gateway.open(), gateway.open("other-rollout")
    async with aiohttp.ClientSession() as http:

        async def status(url: str, key: str | None, **headers: str) -> int:
            if key is not None:
                headers["Authorization"] = f"Bearer {key}"
            body = {"messages": _ask()}
            async with http.post(url, json=body, headers=headers) as answer:
                return answer.status

        chat = f"{rollout.base_url}/chat/completions"
        assert await status(chat, None) == 401
        assert await status(chat, other.api_key) == 401
        assert await status(chat, rollout.api_key) == 200
        root = f"{gateway.url}/v1/chat/completions"
        assert await status(root, rollout.api_key) == 401  # no rollout named
        assert await status(root, rollout.api_key, **{"X-Session-ID": "other-rollout"}) == 401
        assert await status(root, other.api_key, **{"X-Session-ID": "other-rollout"}) == 200
        rollout.close()
        assert await status(chat, rollout.api_key) == 404
    assert len(rollout.calls) == 1 and len(other.calls) == 1
    models = await _client(other).models.list()
    assert [m.id for m in models.data] == [gateway.model_id]


async def test_a_model_error_is_the_apis_error_answer_and_a_failed_call() -> None:
    from palaestra.errors import ModelError
    from tests.support.fake_model import FakeModel

    def broken(params: JsonDict) -> JsonDict:
        raise ModelError("the engine fell over")

    async with Gateway(FakeModel(broken)) as gateway:
        rollout = gateway.open()
        with pytest.raises(openai.APIStatusError) as raised:
            await _client(rollout).chat.completions.create(model="m", messages=_ask())
    assert raised.value.status_code == 502
    assert "the engine fell over" in str(raised.value)
    [call] = rollout.calls
    assert call.error is not None and "the engine fell over" in call.error
    assert call.output == [] and gateway.counts.errors == 1
    assert rollout.response()["status"] == "failed"


async def test_training_fields_a_harness_sends_never_reach_the_model() -> None:
    from tests.support.fake_model import FakeModel, say

    model = FakeModel(lambda params: say("ok"))
    async with Gateway(model) as gateway:
        rollout = gateway.open()
        forged = {"role": "assistant", "content": "earlier", "prompt_token_ids": [1, 2]}
        forged["generation_token_ids"] = [3]
        messages = [*_ask(), forged, {"role": "user", "content": "go on"}]
        await _client(rollout).chat.completions.create(model="m", messages=messages)
    assert all("prompt_token_ids" not in item for item in model.requests[0]["input"])


async def test_a_continued_call_whose_ids_do_not_extend_its_parent_counts_as_retokenised() -> None:
    # The engine re-tokenised the first answer ("one" came back as 9, not 3): the gateway
    # says the second call continues the first, the ids say otherwise, and the tree counts it.
    def answer(params: JsonDict) -> JsonDict:
        items = params["input"] if isinstance(params["input"], list) else []
        if len(items) == 1:
            return text_response("one", last_item=_ids([1, 2], [3]))
        return text_response("two", last_item=_ids([1, 2, 9, 4], [5]))

    with ScriptedModelServer(answer) as server:
        model = OpenAIResponsesModel(server.url)
        try:
            async with Gateway(model) as gateway:
                rollout = gateway.open()
                client = _client(rollout)
                asked = [{"role": "user", "content": "Count."}]
                await client.chat.completions.create(model="m", messages=asked)
                more = [
                    *asked,
                    {"role": "assistant", "content": "one"},
                    {"role": "user", "content": "Go on."},
                ]
                await client.chat.completions.create(model="m", messages=more)
        finally:
            await model.aclose()
    assert [call.parent for call in rollout.calls] == [None, 0]
    tree = call_tree(rollout.response())
    assert tree.retokenized == [1]
    assert tree.leaves == [0, 1]  # placed by its ids: a root of its own, never spliced


def _ids(prompt: list[int], generated: list[int]) -> JsonDict:
    return {
        "prompt_token_ids": prompt,
        "generation_token_ids": generated,
        "generation_log_probs": [-0.5] * len(generated),
    }


async def test_a_tool_call_sent_back_with_other_spacing_still_continues_its_call(
    gateway: Gateway, scripted: ScriptedModelServer
) -> None:
    # A harness that parses the model's arguments and writes them back (OpenHands' SDK does)
    # sends '{"city":"Paris"}' for the model's '{"city": "Paris"}': the same call.
    rollout = gateway.open()
    client = _client(rollout)
    messages = _ask()
    first = await client.chat.completions.create(model="m", messages=messages, tools=[WEATHER_TOOL])
    answer = first.choices[0].message.model_dump(exclude_none=True)
    answer["tool_calls"][0]["function"]["arguments"] = '{"city":"Paris"}'
    messages.append(answer)
    messages.append({"role": "tool", "tool_call_id": "call_w1", "content": "sunny, 24C"})
    await client.chat.completions.create(model="m", messages=messages, tools=[WEATHER_TOOL])
    assert [c.parent for c in rollout.calls] == [None, 0]
    # the model is given its own call back, as it wrote it
    sent = scripted.bodies("/v1/responses")[-1]
    calls = [i for i in sent["input"] if i.get("type") == "function_call"]
    assert [c["arguments"] for c in calls] == ['{"city": "Paris"}']


async def test_a_chat_model_behind_the_gateway_converts_only_what_each_call_adds(
    scripted: ScriptedModelServer,
) -> None:
    model = OpenAIChatModel(scripted.url)
    async with Gateway(model) as gateway:
        rollout = gateway.open()
        client = _client(rollout)
        messages: list[JsonDict] = _ask()
        for turn in range(12):
            answer = await client.chat.completions.create(
                model="m", messages=messages, tools=[WEATHER_TOOL]
            )
            said = answer.choices[0].message
            if said.tool_calls:
                call = said.tool_calls[0]
                messages.append(said.model_dump(exclude_none=True))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny"})
            else:
                messages.append({"role": "assistant", "content": said.content})
                messages.append({"role": "user", "content": f"And on day {turn}?"})
    await model.aclose()
    assert [call.parent for call in rollout.calls] == [None, *range(11)]
    # Each call went to the model as the whole input converted afresh would have gone...
    sent = [body["messages"] for body in scripted.bodies("/v1/chat/completions")[-12:]]
    assert sent == [responses_to_chat({"input": call.input})["messages"] for call in rollout.calls]
    # ...but only its new items were converted: the first call's two messages, then the
    # model's answer and the harness' next message (converting every call whole: 156).
    assert rollout.chat_reuse.converted == 2 + 2 * 11


async def test_the_gateways_responses_answers_conform_to_open_responses_whole_and_streamed(
    gateway: Gateway,
) -> None:
    rollout = gateway.open()
    headers = {"Authorization": f"Bearer {rollout.api_key}"}
    body = {"model": "m", "input": "Say hello."}
    async with aiohttp.ClientSession(headers=headers) as session:
        async with session.post(f"{rollout.base_url}/responses", json=body) as answer:
            whole = await answer.json()
        async with session.post(
            f"{rollout.base_url}/responses", json={**body, "stream": True}
        ) as answer:
            raw = await answer.read()
    assert response_problems(whole) == []
    events, problems = stream_problems(raw)
    assert problems == []
    assert events[-1]["response"]["output"] == whole["output"]

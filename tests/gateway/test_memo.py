"""A call converts only what its rollout's recent calls did not send: the reuse must never
change which call is a parent, nor what the model gets."""

from __future__ import annotations

import random
from typing import Any

import orjson

from palaestra.gateway import Gateway, GatewayRollout
from palaestra.gateway.app import GatewayApp
from palaestra.gateway.lineage import item_key
from palaestra.gateway.memo import Memo
from palaestra.models.base import ModelStats
from palaestra.types import JsonDict, assistant_message


class EchoModel:
    """Answers every call with the number of its input items; keeps what it was sent."""

    name = "echo"

    def __init__(self) -> None:
        self.stats = ModelStats()
        self.inputs: list[list[JsonDict]] = []

    async def respond(self, params: JsonDict) -> JsonDict:
        self.inputs.append(params["input"])
        text = f"I saw {len(params['input'])} items."
        return {"id": f"resp_{len(self.inputs)}", "object": "response", "status": "completed",
                "output": [assistant_message(text)], "usage": {}}  # fmt: skip

    async def check(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


class ForgetfulMemo(Memo):
    """Converts every call whole: what the gateway did before it reused anything."""

    def keyed(self, *args: Any, **kwargs: Any) -> Any:
        self.clear()
        return super().keyed(*args, **kwargs)


class Harness:
    """One rollout on an in-process gateway app, called with chat bodies."""

    def __init__(self, *, forgetful: bool = False) -> None:
        self.model = EchoModel()
        gateway = Gateway(self.model)
        gateway.url = "http://127.0.0.1:0"  # the handler alone: nothing listens
        self.app = GatewayApp(gateway)
        self.rollout: GatewayRollout = gateway.open()
        if forgetful:
            self.rollout._memo = ForgetfulMemo()
        self.scope = {
            "path": f"/r/{self.rollout.id}/v1/chat/completions",
            "method": "POST",
            "headers": [(b"authorization", b"Bearer " + self.rollout.api_key.encode())],
        }

    async def call(self, messages: list[JsonDict]) -> str:
        body = orjson.dumps({"model": "m", "messages": messages})
        status, _, answer = await self.app.answer(self.scope, body)
        assert status == 200, answer
        return str(orjson.loads(answer)["choices"][0]["message"]["content"])


def _start() -> list[JsonDict]:
    return [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Count the files."},
    ]


async def _continue(harness: Harness, messages: list[JsonDict], turns: int) -> None:
    for turn in range(turns):
        answer = await harness.call(messages)
        messages.append({"role": "assistant", "content": answer})
        messages.append({"role": "user", "content": f"observation {turn}"})


async def test_a_message_edited_deep_in_the_history_is_not_taken_for_a_continuation() -> None:
    harness = Harness()
    messages = _start()
    await _continue(harness, messages, 5)
    # The next call carries the whole conversation, but its first user message is edited:
    # every message after it is byte for byte what the last call sent.
    edited = [dict(message) for message in messages]
    edited[1]["content"] = "Count the folders."
    await harness.call(edited)
    # An edited answer of the model deep in the history is no continuation either.
    tampered = [dict(message) for message in messages]
    tampered[4]["content"] = "I saw 99 items."
    await harness.call(tampered)

    calls = harness.rollout.calls
    assert [call.parent for call in calls] == [None, 0, 1, 2, 3, None, 0]
    sent = harness.model.inputs[5]
    assert next(item["content"] for item in sent if item.get("role") == "user") == (
        "Count the folders."
    )
    assert len(sent) == len(edited)  # all of it is new, none of it the parent's record
    # The call after the tampered answer continues the last call that is still a prefix
    # (the first: the tampered answer is the second's) and brings the rest as new.
    assert calls[6].input[:3] == [*calls[0].input, *calls[0].output]
    said = [item_key(item) for item in calls[6].input if item.get("role") == "assistant"]
    assert said[1] == ("m", "assistant", "I saw 99 items.")


async def test_reused_work_gives_the_parents_and_inputs_a_whole_conversion_gives() -> None:
    """A random harness (continues, retries, edits, truncates, forges token fields, runs a
    sub-agent beside its main conversation) against a gateway that converts every call whole."""
    chooser = random.Random(35)
    fast, whole = Harness(), Harness(forgetful=True)
    conversations: list[list[JsonDict]] = [_start(), [{"role": "user", "content": "Sub-task."}]]
    for step in range(120):
        messages = conversations[chooser.randrange(2)]
        action = chooser.random()
        sent = [dict(message) for message in messages]
        if action < 0.1 and len(sent) > 2:  # an edit somewhere in the history
            at = chooser.randrange(len(sent))
            sent[at]["content"] = f"edited at step {step}"
        elif action < 0.2 and len(sent) > 3:  # a compaction: the start, then the recent end
            sent = [*sent[:1], *sent[-2:]]
        elif action < 0.25:  # a forged token field on a message it sends back
            sent[-1]["prompt_token_ids"] = [1, 2, 3]
        answers = {await fast.call(sent), await whole.call(sent)}
        assert len(answers) == 1, step
        if action >= 0.3:  # the harness keeps the answer and goes on (else: a retry)
            messages[:] = [*sent, {"role": "assistant", "content": answers.pop()}]
            messages.append({"role": "user", "content": f"observation {step}"})
            for message in messages:
                message.pop("prompt_token_ids", None)

    def shown(harness: Harness) -> list[Any]:
        return [
            (call.parent, [item_key(item) for item in call.input], len(call.input))
            for call in harness.rollout.calls
        ]

    assert shown(fast) == shown(whole)
    parents = [call.parent for call in fast.rollout.calls]
    assert parents.count(None) > 5 and sum(p is not None for p in parents) > 60
    assert all("prompt_token_ids" not in item for sent in fast.model.inputs for item in sent)
    trajectories = [harness.rollout.response()["output"] for harness in (fast, whole)]
    fast_items, whole_items = (
        [(item_key(item), item["producer"]) for item in output] for output in trajectories
    )
    assert fast_items == whole_items

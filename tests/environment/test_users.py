"""palaestra.environment.users: scripted and model users behind one interface."""

from __future__ import annotations

import pytest

from palaestra.environment.users import ModelUser, ScriptedUser, UserTurn, as_seen_by_user
from palaestra.errors import ModelError, UserModelFailure
from palaestra.models.base import ModelStats
from palaestra.types import FailureKind, JsonDict


class Answering:
    """A model that answers each request with the next of ``texts`` (or raises ``error``)."""

    name = "answering"

    def __init__(self, *texts: str, error: ModelError | None = None) -> None:
        self.texts = list(texts)
        self.error = error
        self.requests: list[JsonDict] = []
        self.stats = ModelStats()

    async def respond(self, params: JsonDict) -> JsonDict:
        self.requests.append(params)
        if self.error is not None:
            raise self.error
        text = self.texts.pop(0)
        return {
            "output": [
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            ]
        }

    async def check(self) -> None: ...

    async def aclose(self) -> None: ...


def said(role: str, text: str) -> JsonDict:
    return {"type": "message", "role": role, "content": text}


async def test_a_scripted_user_says_its_turns_in_order_then_is_done() -> None:
    user = ScriptedUser(["book it", "now cancel it"])
    assert await user.reply([]) == UserTurn("book it")
    assert await user.reply([]) == UserTurn("now cancel it")
    assert user.remaining == 0
    assert (await user.reply([])).done


async def test_a_model_user_sees_the_policy_as_its_interlocutor_and_stops_on_a_signal() -> None:
    model = Answering("I want to fly to Paris.", "Thanks! ###STOP###")
    user = ModelUser(model, "You are Ana. You want a flight.", stop_signals=["###STOP###"])
    conversation = [
        said("user", "hi"),
        {"type": "function_call", "call_id": "c", "name": "search", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "[]"},
        said("assistant", "Where to?"),
    ]
    first = await user.reply(conversation)
    assert first == UserTurn("I want to fly to Paris.")
    sent = model.requests[0]
    assert sent["instructions"] == "You are Ana. You want a flight."
    assert sent["input"] == [  # roles flipped, tools hidden
        {"role": "assistant", "content": "hi"},
        {"role": "user", "content": "Where to?"},
    ]
    assert (await user.reply(conversation)).done


@pytest.mark.parametrize(
    "model", [Answering(error=ModelError("503 after 3 attempts")), Answering("   ")]
)
async def test_a_user_model_that_fails_is_a_user_model_error_never_a_turn(
    model: Answering,
) -> None:
    with pytest.raises(UserModelFailure) as raised:
        await ModelUser(model, "be a user").reply([said("assistant", "hello")])
    assert raised.value.kind == FailureKind.USER_MODEL_ERROR


def test_only_messages_with_text_are_shown_to_the_user() -> None:
    items = [
        {"type": "reasoning", "summary": []},
        said("system", "secret policy"),
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
        },
        said("assistant", ""),
    ]
    assert as_seen_by_user(items) == [{"role": "user", "content": "Done."}]

"""One rollout behind the gateway: its base URL, its secret, and every call it made.

The gateway records each call as a ``Call`` (what was sent to the model, what it answered,
the training fields, timing and failure). ``GatewayRollout.prepare`` finds the call a new one
continues (``palaestra.gateway.lineage``) and puts that call's recorded items, which carry the
token ids when the model captures tokens, in place of the messages the harness sent back: a
model in token mode then continues the exact ids it sampled instead of re-tokenising text.
``response`` assembles the rollout's trajectory from the calls.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from palaestra.errors import PalaestraError
from palaestra.gateway.lineage import Key, Lineage, chain, item_key, keyed
from palaestra.gateway.memo import Memo
from palaestra.models.chat_format import ChatReuse
from palaestra.types import CALL_INDEX, CALL_PARENT, JsonDict, Producer, add_usage, empty_usage

if TYPE_CHECKING:
    from palaestra.gateway.apis import Request
    from palaestra.models.affinity import RolloutScope

_POLICY = Producer.POLICY.value
_TOOL = Producer.TOOL.value
_ENVIRONMENT = Producer.ENVIRONMENT.value


class UnknownResponse(PalaestraError, LookupError):
    """A ``previous_response_id`` that names no answer of the rollout."""


@dataclass(slots=True)
class Call:
    """One model call a harness made through the gateway."""

    index: int
    api: str
    """``chat``, ``completions`` or ``responses``: the API the harness called."""
    stream: bool
    parent: int | None
    """The index of the call this one continues (message-level), None: a new branch."""
    input: list[JsonDict]
    """The Responses input items as sent to the model (the parent's recorded items first)."""
    output: list[JsonDict]
    """The Responses output items the model answered (empty for a failed call)."""
    prompt_ids: list[int] | None
    sampled_ids: list[int] | None
    log_probs: list[float] | None
    finish_reason: str | None
    policy_version: int | None
    started: float
    """When the call arrived (``time.time()``)."""
    latency_s: float
    """Seconds from arrival to the model's answer (a pause's wait included)."""
    error: str | None
    """Why the call failed (the harness got an error answer); None for an answered call."""


@dataclass(slots=True)
class Prepared:
    """A call about to go to the model: its params and where its history came from."""

    params: JsonDict
    parent: int | None
    fresh_from: int
    """The first input item that is new in this call (not its parent's input or answer)."""
    keys: list[Key]
    hashes: list[int]


class GatewayRollout:
    """One rollout's endpoint on a gateway: ``base_url`` and ``api_key`` for its harness.

    Made by ``Gateway.open``. ``calls`` lists every call in arrival order; ``close`` ends the
    endpoint (later calls are 404).
    """

    def __init__(
        self,
        rollout_id: str,
        root_url: str,
        *,
        scope: RolloutScope,
        on_close: Callable[[GatewayRollout], None] | None = None,
    ) -> None:
        self.id = rollout_id
        self.base_url = f"{root_url}/r/{rollout_id}/v1"
        self.api_key = secrets.token_urlsafe(24)
        self.secret = self.api_key.encode()
        self.calls: list[Call] = []
        self.closed = False
        self.scope = scope
        """The model pools' view of this rollout (its endpoint, its policy versions, the
        policy clock of whoever opened it: a trainer's sampler)."""
        self._on_close = on_close
        self._lineage = Lineage()
        self._memo = Memo()
        self.chat_reuse = ChatReuse()
        """What the model's chat conversion made of this rollout's recent calls (the gateway
        sets it for each call: a chat model then converts only what the call adds)."""
        self.model = ""
        """The name of the model the gateway serves (the trajectory's ``model``)."""
        self._fresh_from: list[int] = []
        self._usages: list[JsonDict] = []
        self._responses: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"GatewayRollout({self.id!r}, calls={len(self.calls)})"

    def close(self) -> None:
        """End the endpoint: later calls on ``base_url`` get 404 (the calls stay here)."""
        self.closed = True
        self._memo.clear()
        self.chat_reuse.clear()
        if self._on_close is not None:
            self._on_close(self)

    # --- recording ----------------------------------------------------------------------

    def prepare(self, request: Request) -> Prepared:
        """``request``'s params with the history its parent call recorded, and that parent.

        Only the messages the rollout's recent calls did not send are converted and keyed
        (``palaestra.gateway.memo``). ``previous_response_id`` (Responses API): the input
        continues the call that answered that response, whose input and answer come first."""
        params = request.params
        start = hash(("instructions", params.get("instructions")))
        if request.previous_response_id is not None:
            earlier = self._responses.get(request.previous_response_id)
            if earlier is None:
                raise UnknownResponse(request.previous_response_id)
            before = self.calls[earlier]
            items = [*before.input, *before.output]
            for element in request.raw:
                items.extend(request.convert(element))
            keys, positions = keyed(items)
            hashes = chain(keys, start)
        else:
            seen = self._memo.keyed(request.api, start, request.raw, request.convert)
            items, keys, positions, hashes = seen.items, seen.keys, seen.positions, seen.hashes
        found = self._lineage.parent(keys, hashes)
        if found is None:
            params["input"] = items
            return Prepared(params, None, 0, keys, hashes)
        parent, covered = found
        recorded = self.calls[parent]
        history = [*recorded.input, *recorded.output]
        rest = items[positions[covered - 1] + 1 :]
        params["input"] = history + rest
        return Prepared(params, parent, len(history), keys, hashes)

    def record(
        self,
        prepared: Prepared,
        *,
        api: str,
        stream: bool,
        started: float,
        answer: JsonDict | None,
        finish_reason: str | None,
        policy_version: int | None,
        error: str | None,
    ) -> Call:
        """Add the call ``prepared`` became: answered (``answer``) or failed (``error``)."""
        output: list[JsonDict] = []
        tokens: JsonDict = {}
        if answer is not None:
            output = answer.get("output") or []
            if output and isinstance(output[-1], dict):
                tokens = output[-1]
        call = Call(
            index=len(self.calls),
            api=api,
            stream=stream,
            parent=prepared.parent,
            input=prepared.params["input"],
            output=output,
            prompt_ids=tokens.get("prompt_token_ids"),
            sampled_ids=tokens.get("generation_token_ids"),
            log_probs=tokens.get("generation_log_probs"),
            finish_reason=finish_reason,
            policy_version=policy_version,
            started=started,
            latency_s=time.time() - started,
            error=error,
        )
        self.calls.append(call)
        self._fresh_from.append(prepared.fresh_from)
        usage = answer.get("usage") if answer is not None else None
        self._usages.append(usage if isinstance(usage, dict) else {})
        if answer is not None and error is None:
            out_keys = [key for key in map(item_key, output) if key is not None]
            start = (
                prepared.hashes[-1]
                if prepared.hashes
                else hash(("instructions", prepared.params.get("instructions")))
            )
            self._lineage.add(
                call.index, prepared.keys + out_keys, prepared.hashes + chain(out_keys, start)
            )
            response_id = answer.get("id")
            if isinstance(response_id, str):
                self._responses[response_id] = call.index
        return call

    # --- the trajectory -----------------------------------------------------------------

    @property
    def producers(self) -> list[str]:
        """Who produced each item of ``response()["output"]``, in order."""
        return [str(item["producer"]) for item in self.response()["output"]]

    def response(self) -> JsonDict:
        """The rollout's trajectory as one OpenAI Response dict.

        ``output`` holds, call by call in arrival order, the input items new since the call's
        parent (a tool's output is the tool's, anything else the harness sent is the
        environment's) and then the call's answer (the policy's), whose last item carries the
        training fields when the model captures tokens, the call's ``call_index`` and, when it
        continues one, its parent's (``call_parent``; ``palaestra.training.tree`` reads them).
        Every item carries its ``producer``. A failed call adds its new input items only.
        ``usage`` adds up the calls' token counts.
        """
        output: list[JsonDict] = []
        for call, fresh_from in zip(self.calls, self._fresh_from, strict=True):
            for item in call.input[fresh_from:]:  # the harness' (no token ids: see api)
                kind = item.get("type", "message")
                producer = _TOOL if kind == "function_call_output" else _ENVIRONMENT
                output.append({**item, "producer": producer})
            answer = [{**item, "producer": _POLICY} for item in call.output]
            if answer and call.error is None:  # beside the token ids: the tree's claim
                answer[-1][CALL_INDEX] = call.index
                if call.parent is not None:
                    answer[-1][CALL_PARENT] = call.parent
            output.extend(answer)
        last = next((call for call in reversed(self.calls) if call.error is None), None)
        return {
            "id": f"resp_gateway_{self.id}",
            "object": "response",
            "created_at": int(self.calls[0].started) if self.calls else int(time.time()),
            "model": self.model,
            "status": "completed" if last is not None else "failed",
            "error": None,
            "incomplete_details": None,
            "output": output,
            "usage": self._usage(),
            "tools": [],
            "tool_choice": "auto",
            "parallel_tool_calls": True,
            "metadata": {"gateway_calls": str(len(self.calls))},
        }

    def _usage(self) -> JsonDict:
        usage = empty_usage()
        for each in self._usages:
            add_usage(usage, each)
        return usage

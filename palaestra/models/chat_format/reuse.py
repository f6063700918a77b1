"""Converting only what a call adds: the chat messages of a caller's recent calls, reused.

A harness behind the gateway sends its whole history on every call, and the gateway hands the
model the same history again plus what is new. A chat model client converts the Responses
input to chat messages on every call (``responses_to_chat``); done from scratch that is Python
work in proportion to the history, call after call. A ``ChatReuse`` keeps the input items of
a caller's last few conversions with the messages they became, and converts a new input from
the last point the two share at which the conversion starts afresh (after any item that is
not the assistant's: nothing before it bears on what follows), reusing the messages before.

The result is what converting the whole input gives: items are compared by value (in C, each
object first by identity), and a message depends only on its items and ``keep_token_ids``.
One promise is asked of the caller that sets a ``ChatReuse`` (``CHAT_REUSE``): an item it
has handed over is never changed in place (an unchanged object would compare equal to
itself). The messages made are shared between the calls' requests, so nothing may change
those in place either (the model clients only serialise them).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

from palaestra._util.prefix import shared_start
from palaestra.models.chat_format.requests import fold
from palaestra.types import JsonDict

_KEPT = 4
"""Conversions remembered: a harness continuing its last call, and a few branches
(sub-agents, retries, a token client's conversion of the new items alone) interleaved."""


@dataclass(slots=True)
class _Converted:
    keep_token_ids: bool
    items: list[Any]
    messages: list[JsonDict]
    cut_items: list[int]
    """Ascending item counts at which the conversion starts afresh (0 first)."""
    cut_messages: list[int]
    """How many messages the items before each cut became."""


class ChatReuse:
    """The input items of one caller's recent conversions and the chat messages they became.

    ``converted`` counts the items converted, not reused (what a test can hold it to)."""

    __slots__ = ("_kept", "converted")

    def __init__(self) -> None:
        self._kept: list[_Converted] = []
        self.converted = 0

    def clear(self) -> None:
        self._kept.clear()

    def messages(self, items: list[Any], keep_token_ids: bool) -> list[JsonDict]:
        """The chat messages of ``items``, as ``fold`` makes them (``ModelError`` for an item
        that cannot be sent), converting only what no kept conversion shares."""
        best: _Converted | None = None
        shared = 0
        for kept in self._kept:
            if kept.keep_token_ids != keep_token_ids or len(kept.items) <= shared:
                continue  # (a shorter list cannot share more than found already)
            count = shared_start(items, kept.items)
            if count > shared:
                best, shared = kept, count
                if count == len(items):
                    break
        if best is None:
            first = 0
            messages: list[JsonDict] = []
            cuts: tuple[list[int], list[int]] = ([0], [0])
        else:
            if shared == len(items) == len(best.items):  # the same input again
                self._kept.remove(best)
                self._kept.insert(0, best)
                return list(best.messages)
            at = bisect_right(best.cut_items, shared) - 1
            first = best.cut_items[at]
            messages = best.messages[: best.cut_messages[at]]
            cuts = (best.cut_items[: at + 1], best.cut_messages[: at + 1])
        fold(items[first:], keep_token_ids, messages, cuts, first)
        self.converted += len(items) - first
        stored = _Converted(keep_token_ids, list(items), list(messages), *cuts)
        self._kept.insert(0, stored)
        del self._kept[_KEPT:]
        return messages

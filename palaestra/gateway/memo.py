"""What a rollout's recent calls sent, converted and keyed once, so that a call converts only
what is new in it.

A harness sends its whole history on every call. Converting every message to Responses items
and keying it for the parent lookup (``palaestra.gateway.lineage``) on every call would cost
the gateway time in proportion to the history, call after call. Instead, the raw messages of
the last few calls (as parsed from their requests) are kept with the items and keys they
became; a new call's list is compared with each of them (equality of parsed JSON, which Python
does in C) to find the longest start it shares with one, and only the messages after that
start are converted and keyed.

This is exact, not a guess: a message converts on its own (its items depend on nothing
else in the request), so equal raw messages give equal items, up to the ids the conversion
makes up, which are not part of a message's identity. The result is what converting the
whole list would give; the parent lookup then runs on it as it would on a fresh conversion.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from palaestra._util.prefix import shared_start
from palaestra.gateway.lineage import Key, item_key
from palaestra.types import JsonDict

Convert = Callable[[Any], list[JsonDict]]
"""One raw element of a request (a chat message, a Responses input item) -> its items."""

_KEPT = 4
"""Calls remembered per rollout: a harness continuing its last call, and a few branches
(sub-agents, retries) interleaved with it."""


@dataclass(slots=True)
class Keyed:
    """A call's input items, with the keys that count and their chained hashes."""

    items: list[JsonDict]
    keys: list[Key]
    positions: list[int]
    """Where in ``items`` each key's item is."""
    hashes: list[int]
    """Entry ``i`` stands for ``keys[: i + 1]`` (``lineage.chain``)."""


@dataclass(slots=True)
class _Seen:
    kind: str
    start: int
    raw: list[Any]
    item_ends: list[int]
    """How many items ``raw[: i + 1]`` became."""
    key_ends: list[int]
    """How many keys ``raw[: i + 1]`` became."""
    keyed: Keyed


class Memo:
    """The raw requests of a rollout's last few calls and what they became."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: list[_Seen] = []

    def clear(self) -> None:
        self._seen.clear()

    def keyed(self, kind: str, start: int, raw: list[Any], convert: Convert) -> Keyed:
        """``raw`` converted (``convert``) and keyed, its hashes chained from ``start``.

        ``kind`` names what ``raw`` holds (a chat message list or Responses items): only a call
        of the same kind and the same ``start`` (its instructions) is reused."""
        best: _Seen | None = None
        shared = 0
        for seen in self._seen:
            if seen.kind != kind or seen.start != start or len(seen.raw) <= shared:
                continue  # (a shorter list cannot share more than found already)
            count = shared_start(raw, seen.raw)
            if count > shared:
                best, shared = seen, count
                if count == len(raw):
                    break
        if best is None:
            items: list[JsonDict] = []
            keys: list[Key] = []
            positions: list[int] = []
            hashes: list[int] = []
            item_ends: list[int] = []
            key_ends: list[int] = []
        else:
            item_count = best.item_ends[shared - 1]
            key_count = best.key_ends[shared - 1]
            items = best.keyed.items[:item_count]
            keys = best.keyed.keys[:key_count]
            positions = best.keyed.positions[:key_count]
            hashes = best.keyed.hashes[:key_count]
            item_ends = best.item_ends[:shared]
            key_ends = best.key_ends[:shared]
            if shared == len(raw) == len(best.raw):  # the same list again: nothing new
                self._seen.remove(best)
                self._seen.insert(0, best)
                return Keyed(items, keys, positions, hashes)
        running = hashes[-1] if hashes else start
        for element in raw[shared:]:
            for item in convert(element):
                key = item_key(item)
                if key is not None:
                    running = hash((running, key))
                    keys.append(key)
                    positions.append(len(items))
                    hashes.append(running)
                items.append(item)
            item_ends.append(len(items))
            key_ends.append(len(keys))
        keyed = Keyed(items, keys, positions, hashes)
        # What is stored is copied out of the result: the caller may hand its lists on.
        stored = Keyed(list(items), list(keys), list(positions), list(hashes))
        self._seen.insert(0, _Seen(kind, start, raw, item_ends, key_ends, stored))
        del self._seen[_KEPT:]
        return keyed

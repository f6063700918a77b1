"""Which recorded call a new call continues: message-level prefixes of a rollout's calls.

A harness sends its whole conversation on every call. A call continues an earlier one when that
call's input and its answer, message by message, are the start of the new call's input; the
longest such call is its parent. A call that extends none (the harness compacted its history,
edited a message, started a sub-agent, or this is its first call) is a root: a new branch.

Messages are compared by what a harness keeps of them (``item_key``): role and text, a tool
call's id, name and arguments (as the JSON value they hold: a harness that parses them and
writes them back with other spacing or key order sends the same call), a tool output's id and
text. Ids the gateway or the model made
up, status fields, token ids and reasoning items (harnesses drop reasoning from what they send
back) are not part of a message's identity.

Lookups cost one hash per message of the new call (``chain``), not one comparison per recorded
call: every recorded call is indexed by the chained hash of its messages, and the new call's
prefixes of the lengths recorded calls have are looked up longest first (a hit is then
compared in full, so a hash collision cannot make a wrong parent). The hashes of the messages
a rollout's recent calls sent already are reused (``palaestra.gateway.memo``).
"""

from __future__ import annotations

from typing import Any

import orjson

from palaestra.types import JsonDict

Key = tuple[Any, ...]

_IGNORED = frozenset(
    {
        "id",
        "status",
        "prompt_token_ids",
        "generation_token_ids",
        "generation_log_probs",
        "producer",
    }
)


def _text(content: Any) -> Any:
    """A message's content as one comparable value: its text, or its parts without ids."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        texts: list[str] = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:  # an image or another kind of part: compared as it is
                return orjson.dumps(content, option=orjson.OPT_SORT_KEYS)
        return "".join(texts)
    return orjson.dumps(content, option=orjson.OPT_SORT_KEYS)


def _arguments(arguments: Any) -> Any:
    """A tool call's arguments as the JSON value they hold (keys sorted, no spacing); text that
    is no JSON as it is."""
    if not isinstance(arguments, str):
        return arguments
    try:
        return orjson.dumps(orjson.loads(arguments), option=orjson.OPT_SORT_KEYS)
    except orjson.JSONDecodeError:
        return arguments


def item_key(item: JsonDict) -> Key | None:
    """What identifies ``item`` across a harness' calls; None for an item that does not count
    (reasoning)."""
    kind = item.get("type", "message")
    if kind == "message":
        return ("m", item.get("role"), _text(item.get("content")))
    if kind == "function_call":
        return ("f", item.get("call_id"), item.get("name"), _arguments(item.get("arguments")))
    if kind == "function_call_output":
        return ("o", item.get("call_id"), _text(item.get("output")))
    if kind == "reasoning":
        return None
    kept = {key: value for key, value in item.items() if key not in _IGNORED}
    return ("x", orjson.dumps(kept, option=orjson.OPT_SORT_KEYS))


def keyed(items: list[JsonDict]) -> tuple[list[Key], list[int]]:
    """The keys of ``items`` that count, and the position in ``items`` of each."""
    keys: list[Key] = []
    positions: list[int] = []
    for position, item in enumerate(items):
        key = item_key(item)
        if key is not None:
            keys.append(key)
            positions.append(position)
    return keys, positions


def chain(keys: list[Key], start: int = 0) -> list[int]:
    """Chained hashes: entry ``i`` stands for ``keys[: i + 1]`` (``start``: the hash before)."""
    hashes: list[int] = []
    running = start
    for key in keys:
        running = hash((running, key))
        hashes.append(running)
    return hashes


class Lineage:
    """The recorded calls of one rollout, indexed by the messages of their input and answer."""

    __slots__ = ("_by_hash", "_keys", "_lengths")

    def __init__(self) -> None:
        self._by_hash: dict[int, int] = {}
        self._keys: dict[int, list[Key]] = {}
        self._lengths: list[int] = []
        """How many keys the recorded calls have, each length once, longest first: the only
        prefix lengths of a new call worth looking up."""

    def add(self, index: int, keys: list[Key], hashes: list[int]) -> None:
        """Record call ``index`` whose input and answer have ``keys`` (chained: ``hashes``).

        A later call with the same messages takes the place of an earlier one: a harness
        continues the answer it got last."""
        if not keys:
            return
        self._by_hash[hashes[-1]] = index
        self._keys[index] = keys
        lengths = self._lengths
        if len(keys) not in lengths:
            lengths.append(len(keys))
            lengths.sort(reverse=True)

    def parent(self, keys: list[Key], hashes: list[int]) -> tuple[int, int] | None:
        """The call whose messages are the longest prefix of ``keys`` (``hashes`` chained),
        and how many of ``keys`` it covers; None when no recorded call is a prefix."""
        by_hash = self._by_hash
        for length in self._lengths:
            if length > len(hashes):
                continue
            index = by_hash.get(hashes[length - 1])
            if index is not None and self._keys[index] == keys[:length]:
                return index, length
        return None

"""The start two lists share, found with comparisons Python does in C.

A harness (or the gateway in front of a model) sends a conversation's whole history on every
call; what is new in a call is what follows the start it shares with an earlier one. Finding
that start element by element in Python would cost a Python step per element; comparing whole
slices costs one C comparison each (equal objects compare by identity first, so elements an
earlier call handed on unchanged cost almost nothing).
"""

from __future__ import annotations

from typing import Any


def shared_start(new: list[Any], old: list[Any]) -> int:
    """How many elements ``new`` and ``old`` share from their start (a whole slice at a time,
    halving on a difference)."""
    length = min(len(new), len(old))
    if new[:length] == old[:length]:
        return length
    low, high = 0, length  # new[:low] == old[:low]; they differ before ``high``
    while high - low > 1:
        middle = (low + high) // 2
        if new[low:middle] == old[low:middle]:
            low = middle
        else:
            high = middle
    return low

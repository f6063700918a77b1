"""The start two lists share, found a slice at a time."""

from __future__ import annotations

from palaestra._util.prefix import shared_start


def test_the_shared_start_of_two_lists_is_found_wherever_they_part() -> None:
    old = [{"n": n} for n in range(37)]
    for parting in range(38):
        new = [*old[:parting], {"n": "other"}, *old[parting + 1 :]]
        assert shared_start(new, old) == min(parting, 37)
    assert shared_start(old[:10], old) == 10
    assert shared_start([*old, {"n": 37}], old) == 37
    assert shared_start([], old) == 0

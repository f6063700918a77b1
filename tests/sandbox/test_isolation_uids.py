from __future__ import annotations

from palaestra.sandbox.isolation import UidPool


def test_the_least_recently_released_uid_is_reused_last() -> None:
    pool = UidPool(size=3)
    first = pool.acquire()
    pool.release(first)
    second = pool.acquire()
    assert second != first  # a just-released uid may still hold unreaped processes
    pool.release(second)
    seen = {pool.acquire() for _ in range(3)}
    assert len(seen) == 3 and first in seen and second in seen

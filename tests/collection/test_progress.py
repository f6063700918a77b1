"""RichProgress: coalesced updates, and the final state always shown."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from palaestra.collection.collector import RunSummary
from palaestra.collection.progress import RichProgress


def finish(progress: RichProgress, summary: RunSummary, rollouts: int) -> None:
    for _ in range(rollouts):
        summary.done += 1
        summary.reward_sum += 1.0
        progress.update(summary)


def test_the_final_count_is_shown_although_rapid_updates_are_coalesced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    output = io.StringIO()
    progress = RichProgress(Console(file=output, width=120))
    drawn: list[int] = []
    real_update = progress._bar.update

    def counted(*args: object, **kwargs: object) -> None:
        drawn.append(int(kwargs.get("completed", -1)))  # type: ignore[call-overload]
        real_update(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(progress._bar, "update", counted)
    summary = RunSummary(total=500)
    progress.start(summary)
    finish(progress, summary, 500)
    progress.stop()
    assert len(drawn) < 10  # 500 updates within a fraction of a second
    assert drawn[-1] == 500
    assert "500/500" in output.getvalue()

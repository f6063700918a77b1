"""End to end: a run collected with the real embedded model, read in the real browser.

The run is tiny (one weather task, at most two model calls, short answers) so it takes a few
seconds on two cores; ``token_mode`` makes its token ids exact, so the token view shows it as
one sequence, decoded with SmolLM2's own vocabulary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import palaestra
from palaestra.http.runner import BackgroundServer
from palaestra.viewer import open_runs
from palaestra.viewer.app import viewer_app
from tests.models.test_local import needs_local
from tests.viewer.test_browser import browser, open_view, screenshot, texts

pytestmark = [pytest.mark.local_model, needs_local]
__all__ = ["browser"]  # the browser fixture, shared with the other browser tests


def test_a_run_of_the_embedded_model_reads_end_to_end_in_the_browser(
    browser: Any, tmp_path: Path
) -> None:
    output = tmp_path / "weather.jsonl"
    summary = palaestra.collect(
        env="weather",
        model=palaestra.ModelConfig(
            backend="local", options={"token_mode": True, "max_output_tokens": 48}
        ),
        agent_options={"max_steps": 2},
        output=output,
        limit=1,
    )
    assert summary.scored + sum(summary.failures.values()) == 1
    with BackgroundServer(viewer_app(open_runs([output]))) as server:
        open_view(browser, server.url + "/", "/run/0")
        assert texts(browser, "[data-k=rows] .value") == ["1"]
        open_view(browser, server.url + "/", "/rollout/0/0")
        items = texts(browser, ".item .who")
        assert items[0].startswith("SYSTEM") and items[1].startswith("USER")
        assert any(text.startswith("TOOL CALL") for text in items)  # the model called get_weather
        assert "SmolLM2-135M-Instruct" in browser.find_element("id", "usage").text
        screenshot(browser, "10_embedded_model_conversation")
        open_view(browser, server.url + "/", "/tokens/0/0")
        assert browser.find_element("id", "contiguity").text == "contiguous"
        pieces = texts(browser, "#tokens span.t")
        assert pieces[:3] == ["<|im_start|>", "system", "⏎"]
        trained = texts(browser, "#tokens span.t1")
        assert trained and trained[-1] == "<|im_end|>"  # each call's generation, end included
        screenshot(browser, "11_embedded_model_tokens")

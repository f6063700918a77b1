"""browser on the real Chromium and MiniWoB++'s real pages: the page's own reward, both kinds
of action, screenshots in the trajectory, the pool's restarts, and no browser left behind."""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import struct
import tempfile
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from palaestra import LocalEnvironmentClient
from palaestra.authoring.reference import reference_checks
from palaestra.collection.tasks import read_tasks
from palaestra.environment.finding.registry import find_environment
from palaestra.envs.browser.chromium import Browser
from palaestra.envs.browser.environment import MiniWoBBrowser
from palaestra.envs.browser.pool import BrowserPool
from palaestra.errors import ConfigError, InvalidTask, ToolCallRejected
from palaestra.types import JsonDict, ToolOutput
from tests.envs.browser.conftest import browser_processes


def examples() -> list[JsonDict]:
    entry = find_environment("browser")
    assert entry.example_tasks is not None
    return [line.row for line in read_tasks(entry.example_tasks)]


def example(name: str) -> JsonDict:
    return next(row for row in examples() if row["task_name"] == name)


Body = Callable[[LocalEnvironmentClient, str], Awaitable[Any]]


def in_rollout(row: JsonDict, body: Body, **env_args: Any) -> Any:
    """Seed ``row`` in a fresh environment, run ``body``, close, stop the environment."""

    async def go() -> Any:
        client = LocalEnvironmentClient(MiniWoBBrowser(browsers=1, **env_args))
        try:
            session = await client.seed(row)
            try:
                return await body(client, session)
            finally:
                await client.close(session)
        finally:
            await client.aclose()

    return asyncio.run(go())


def element(output: ToolOutput, needle: str) -> tuple[int, int, int]:
    """(ref, x, y) of the first element line of an observation that holds ``needle``."""
    assert isinstance(output, list)
    for line in output[0]["text"].splitlines():
        if needle in line and line.strip().startswith("["):
            ref = int(line.strip()[1:].split("]")[0])
            x, y = line.rsplit("@(", 1)[1].rstrip(")").split(",")
            return ref, int(x), int(y)
    raise AssertionError(f"no element with {needle!r} in {output[0]['text']}")


def test_the_scripted_oracle_scores_1_and_doing_nothing_0_on_every_example() -> None:
    rows = examples()
    assert sorted(row["task_name"] for row in rows) == sorted(
        ["click-button", "click-link", "enter-text", "focus-text", "click-checkboxes",
         "click-option", "choose-list", "click-dialog", "login-user", "enter-password"]
    )  # fmt: skip

    async def go() -> list[str]:
        client = LocalEnvironmentClient(MiniWoBBrowser(browsers=2))
        try:
            return [str(check.status) for check in await reference_checks(client, rows)]
        finally:
            await client.aclose()

    assert asyncio.run(go()) == ["pass", "pass"]


def test_a_wrong_click_gets_the_pages_own_failure_scored_0() -> None:
    row = example("click-button")
    wanted = row["utterance"].split('"')[1]

    async def body(client: LocalEnvironmentClient, session: str) -> Any:
        page = await client.call_tool(session, "observe", {})
        lines = [line for line in page[0]["text"].splitlines() if " button " in line]  # type: ignore[index]
        wrong = next(line for line in lines if f'"{wanted}"' not in line)
        ref = int(wrong.strip()[1:].split("]")[0])
        after = await client.call_tool(session, "click", {"ref": ref})
        return after, await client.verify(session, row, {})

    after, verdict = in_rollout(row, body)
    assert "The episode is over: the page gave reward -1" in after[0]["text"]
    assert verdict.reward == 0.0
    assert verdict.metrics["done"] is True and verdict.metrics["raw_reward"] == -1.0


def test_pixel_actions_alone_solve_a_task_with_real_input_events() -> None:
    row = example("enter-text")
    word = row["utterance"].split('"')[1]

    async def body(client: LocalEnvironmentClient, session: str) -> Any:
        page = await client.call_tool(session, "observe", {})
        _, field_x, field_y = element(page, "input_text")
        _, submit_x, submit_y = element(page, '"Submit"')
        await client.call_tool(session, "click_at", {"x": field_x, "y": field_y})
        typed = await client.call_tool(session, "type_text", {"text": word})
        assert f'value="{word}"' in typed[0]["text"]  # type: ignore[index]
        await client.call_tool(session, "click_at", {"x": submit_x, "y": submit_y})
        return await client.verify(session, row, {})

    verdict = in_rollout(row, body)
    assert verdict.reward == 1.0 and verdict.metrics["raw_reward"] == 1.0
    assert 0 < verdict.metrics["wob_reward"] <= 1.0  # the page's time-scaled reward, kept
    assert verdict.metrics["actions"] == 3


def test_every_observation_holds_a_screenshot_of_the_task_area_as_an_input_image() -> None:
    async def body(client: LocalEnvironmentClient, session: str) -> Any:
        return await client.call_tool(session, "observe", {})

    both = in_rollout(example("focus-text"), body)
    assert [part["type"] for part in both] == ["input_text", "input_image"]
    url = both[1]["image_url"]
    assert url.startswith("data:image/png;base64,")
    png = base64.b64decode(url.split(",", 1)[1])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == (160, 210)
    shot = in_rollout(example("focus-text"), body, observation="screenshot")
    assert [part["type"] for part in shot] == ["input_text", "input_image"]
    assert "[4]" not in shot[0]["text"]
    dom = in_rollout(example("focus-text"), body, observation="dom")
    assert [part["type"] for part in dom] == ["input_text"] and "input_text" in dom[0]["text"]


def test_a_row_whose_seed_draws_another_instruction_is_refused_as_invalid() -> None:
    row = dict(example("click-button"), utterance='Click on the "nothing" button.')

    async def body(client: LocalEnvironmentClient, session: str) -> Any:
        raise AssertionError("seeded")

    with pytest.raises(InvalidTask, match="not the row's"):
        in_rollout(row, body)


def test_bad_arguments_are_one_line_before_any_browser_starts() -> None:
    with pytest.raises(ConfigError, match="observation must be one of"):
        MiniWoBBrowser(observation="video")
    with pytest.raises(ConfigError, match="unknown MiniWoB"):
        MiniWoBBrowser(pages="click-button,no-such-page")
    assert browser_processes(f"{os.getpid()}-never") == []


def test_a_browser_killed_between_rollouts_is_replaced_by_a_healthy_one() -> None:
    pool = BrowserPool(1, 160, 210)
    try:
        first = pool.lease()
        pool.give_back(first)
        os.killpg(first.pid, signal.SIGKILL)  # every process of that Chromium
        second = pool.lease()
        assert second is not first and second.healthy()
        assert pool.stats.restarted == 1 and pool.stats.started == 2 and pool.live() == 1
        assert browser_processes(first.profile) == []
        pool.give_back(second)
    finally:
        pool.close()
    assert browser_processes(second.profile) == []


def test_a_temporary_directory_too_long_for_chromiums_socket_is_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", "/tmp/" + "x" * 60)
    with pytest.raises(ConfigError, match=r"TMPDIR .* too long"):
        Browser(160, 210)


def test_a_key_press_is_a_real_key_event_tab_moves_the_focus_to_the_next_field() -> None:
    row = example("login-user")

    async def body(client: LocalEnvironmentClient, session: str) -> Any:
        page = await client.call_tool(session, "observe", {})
        user, _, _ = element(page, "#username")
        await client.call_tool(session, "type", {"ref": user, "text": "ab"})
        after = await client.call_tool(session, "press_key", {"key": "Tab"})
        with pytest.raises(ToolCallRejected, match="unknown key"):
            await client.call_tool(session, "press_key", {"key": "Hyper"})
        return after

    after = in_rollout(row, body)
    (password,) = [line for line in after[0]["text"].splitlines() if "#password" in line]
    assert "(focused)" in password
    (user,) = [line for line in after[0]["text"].splitlines() if "#username" in line]
    assert 'value="ab"' in user and "(focused)" not in user


def test_a_wheel_turn_over_a_text_area_scrolls_what_the_screenshot_shows() -> None:
    row = {"responses_create_params": {"input": "scroll"}, "task_name": "scroll-text", "seed": 1}

    async def body(client: LocalEnvironmentClient, session: str) -> Any:
        before = await client.call_tool(session, "observe", {})
        _, x, y = element(before, "textarea")
        after = await client.call_tool(session, "scroll", {"x": x, "y": y, "dy": 200})
        again = await client.call_tool(session, "observe", {})
        return before, after, again

    before, after, again = in_rollout(row, body)
    assert before[1]["image_url"] != after[1]["image_url"]  # the text moved up
    assert after[1]["image_url"] == again[1]["image_url"]  # and stays where it was scrolled

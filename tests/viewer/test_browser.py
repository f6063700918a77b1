"""The viewer in a real browser: Debian's headless Chromium driven through its chromedriver.

The real viewer server (token on) serves two runs; each test opens one view, asserts on what
the page shows, and saves a screenshot to ``$PALAESTRA_TEST_ARTIFACTS/viewer/`` (default:
``tests/viewer/artifacts/viewer/``, ignored by git) for a human to look at. Nothing is
downloaded: selenium is pointed at the installed ``chromedriver`` (``scripts/install_browser.sh``
installs both; without them these tests fail saying so, never skip).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest

from palaestra.http.runner import BackgroundServer
from palaestra.viewer import open_runs
from palaestra.viewer.app import viewer_app
from tests.viewer.rows import scored, small_run, write_run
from tests.viewer.test_api import run_b

TOKEN = "browser-token"
ARTIFACTS = (
    Path(os.environ.get("PALAESTRA_TEST_ARTIFACTS") or Path(__file__).parent / "artifacts")
    / "viewer"
)


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("runs")
    runs = open_runs([small_run(folder / "baseline.jsonl"), run_b(folder / "candidate.jsonl")])
    with BackgroundServer(viewer_app(runs, token=TOKEN)) as server:
        yield f"{server.url}/?token={quote(TOKEN)}"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver is None:
        pytest.fail(
            "Chromium and chromedriver are not installed: run scripts/install_browser.sh",
            pytrace=False,
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.add_argument("--window-size=1400,1000")
    chrome = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        yield chrome
    finally:
        chrome.quit()


def open_view(browser: Any, url: str, view: str) -> None:
    """Load ``url#view`` and wait until the page says it has drawn that view."""
    browser.get(f"{url}#{view}")
    wait_drawn(browser, f"#{view}")


def wait_drawn(browser: Any, view: str) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 10).until(
        lambda b: b.execute_script("return document.body.dataset.ready") in (view, "error")
    )
    error = browser.execute_script("return document.body.dataset.ready") == "error"
    assert not error, browser.find_element("id", "error").text


def wait_for(browser: Any, selector: str) -> Any:
    """The element once it is on the page (drawn after an answer that comes later)."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, 10).until(
        lambda b: (b.find_elements("css selector", selector) or [None])[0]
    )


def texts(browser: Any, selector: str) -> list[str]:
    return [element.text for element in browser.find_elements("css selector", selector)]


def screenshot(browser: Any, name: str) -> None:
    browser.save_screenshot(str(ARTIFACTS / f"{name}.png"))


def test_the_run_opens_on_its_summary_and_a_table_of_every_rollout(browser: Any, url: str) -> None:
    open_view(browser, url, "/run/0")
    assert browser.find_element("css selector", "[data-k=rows] .value").text == "15"
    assert browser.find_element("css selector", "[data-k=failed] .value").text == "3"
    assert texts(browser, "[data-k=failed] .chip") == ["tool_error 2", "timeout 1"]
    assert browser.find_element("css selector", "[data-k=mean_reward] .value").text == "0.4583"
    assert len(browser.find_elements("css selector", "#rows-table tbody tr")) == 15
    assert browser.find_element("id", "matched").text == "1\u201315 of 15 matching (15 rows)"
    mean = wait_for(browser, ".figures-table tr[data-figure='mean reward']").text.split()
    assert mean[:3] == ["mean", "reward", "0.4583"]  # with palaestra.evaluate's interval
    assert browser.find_element("css selector", "[data-k=mean_reward] .sub").text.endswith(
        "bootstrap"
    )
    screenshot(browser, "1_summary_and_table")


def test_filters_chosen_on_the_page_narrow_and_sort_the_table(browser: Any, url: str) -> None:
    from selenium.webdriver.support.ui import Select

    open_view(browser, url, "/run/0")
    Select(browser.find_element("id", "f-kind")).select_by_value("tool_error")
    wait_drawn(browser, "#/run/0?kind=tool_error")
    rows = browser.find_elements("css selector", "#rows-table tbody tr")
    assert [row.get_attribute("data-n") for row in rows] == ["12", "14"]
    open_view(browser, url, "/run/0?kind=scored&reward_min=0.4&sort=time&order=desc")
    assert texts(browser, "#rows-table tbody tr td:nth-child(1)") == [
        "9",
        "6",
        "10",
        "3",
        "11",
        "0",
    ]
    assert browser.find_element("id", "f-reward_min").get_attribute("value") == "0.4"
    search = browser.find_element("id", "f-q")
    search.send_keys("Paris")
    wait_drawn(browser, "#/run/0?kind=scored&reward_min=0.4&sort=time&order=desc&q=Paris")
    assert texts(browser, "#rows-table tbody tr td:nth-child(1)") == ["9"]
    open_view(browser, url, "/run/0?kind=failed")
    screenshot(browser, "2_filtered_table")


def test_a_rollout_reads_as_a_conversation_with_its_tool_call_and_verdict(
    browser: Any, url: str
) -> None:
    open_view(browser, url, "/run/0")
    browser.find_element("css selector", "#rows-table tbody tr[data-n='10']").click()
    wait_drawn(browser, "#/rollout/0/10")
    roles = [item.get_attribute("class") for item in browser.find_elements("css selector", ".item")]
    assert roles == [
        "item message system",
        "item message user",
        "item reasoning",
        "item function_call",
        "item function_call_output",
        "item message assistant",
    ]
    assert browser.find_element("css selector", ".function_call .tool-name").text == "get_weather"
    assert '"city": "San Francisco"' in browser.find_element("css selector", ".arguments").text
    output = browser.find_element("css selector", ".function_call_output .tool-name")
    assert output.text == "get_weather"  # paired with its call
    assert browser.find_element("id", "reward").text == "1"
    verdict = browser.find_element("id", "verdict").text
    assert "named_city" in verdict and "said_city" in verdict
    timings = browser.find_element("id", "timings").text
    assert "model" in timings and "0.800 s" in timings
    assert "150" in browser.find_element("id", "usage").text
    screenshot(browser, "3_conversation_with_tool_call")
    browser.find_element("id", "tab-raw").click()  # the row as stored, token ids included
    wait_drawn(browser, "#/raw/0/10")
    raw = wait_for(browser, "#raw:not(:empty)")
    assert (
        '"generation_token_ids": [' in raw.text and '"expected_city": "San Francisco"' in raw.text
    )


def test_simulated_user_turns_are_marked_as_such(browser: Any, url: str) -> None:
    open_view(browser, url, "/rollout/0/11")
    marked = texts(browser, ".item.simulated .body")
    assert marked == ["Hi! When are you free next week?", "Tuesday is bad for me; Wednesday works."]
    # who produced each output item, and that only the policy's are trained on
    chips = [text.lower() for text in texts(browser, ".chip.producer")]  # styled upper-case
    assert chips == ["by simulated user", "by policy · trained"] * 2
    assert "step rewards" in browser.find_element("id", "verdict").text
    screenshot(browser, "4_simulated_user")


def test_a_failed_rollout_shows_its_kind_and_reason(browser: Any, url: str) -> None:
    open_view(browser, url, "/rollout/0/12")
    assert browser.find_element("id", "failure-kind").text == "tool_error"
    assert "KeyError: 'Atlantis'" in browser.find_element("id", "failure-reason").text
    assert browser.find_elements("id", "verdict") == []
    assert texts(browser, ".function_call .tool-name") == ["get_weather"]  # the trajectory so far
    screenshot(browser, "5_failure")


def test_the_token_view_shows_which_tokens_are_trained_on(browser: Any, url: str) -> None:
    open_view(browser, url, "/rollout/0/10")
    browser.find_element("id", "tab-tokens").click()
    wait_drawn(browser, "#/tokens/0/10")
    assert browser.find_element("id", "token-counts").text == "23 of 65 tokens trained on"
    assert browser.find_element("id", "contiguity").text == "contiguous"
    trained = "".join(texts(browser, "#tokens span.t1"))
    assert trained.startswith("functions.get_weather:")
    assert trained.endswith("The weather in San Francisco is cold.<|im_end|>")
    assert texts(browser, "#tokens span.t0")[0] == "<|im_start|>"
    screenshot(browser, "6_tokens")


def test_two_runs_are_paired_by_task_and_read_side_by_side(browser: Any, url: str) -> None:
    open_view(browser, url, "/compare?only=different&sort=delta")
    assert browser.find_element("id", "matched").text == "1\u201316 of 16 pairs (16 in all)"
    first = texts(browser, "#pairs-table tbody tr:first-child td")
    assert first[:2] == ["0", "0"] and first[4] == "-1"
    stats = {k: browser.find_element("css selector", f"[data-k={k}] .value").text for k in (
        "both", "b_better", "a_better", "mean_delta")}  # fmt: skip
    assert stats == {"both": "6", "b_better": "4", "a_better": "2", "mean_delta": "+0.3333"}
    difference = wait_for(browser, "#comparison tr[data-figure='mean reward']")
    assert difference.text.split()[2:5] == ["0.3333", "0.6667", "+0.3333"]
    screenshot(browser, "7_pairs")
    browser.find_element("css selector", "#pairs-table tbody tr:first-child").click()
    wait_drawn(browser, "#/pair/0/0")
    columns = browser.find_elements("css selector", "#pair > div")
    assert len(columns) == 2
    rewards = [c.find_element("id", "reward").text for c in columns]
    assert rewards == ["1", "0"]
    assert all("San Francisco" in c.text for c in columns)
    screenshot(browser, "8_side_by_side")


def test_rollouts_a_running_collection_appends_are_offered_and_shown(
    browser: Any, tmp_path: Path
) -> None:
    path = write_run(tmp_path / "live.jsonl", [scored(0, "Oslo", 1.0)])
    with BackgroundServer(viewer_app(open_runs([path]))) as server:
        open_view(browser, server.url + "/", "/run/0")
        assert len(browser.find_elements("css selector", "#rows-table tbody tr")) == 1
        with open(path, "ab") as out:
            for task in (1, 2):
                out.write(orjson.dumps(scored(task, "Lima", 0.0)) + b"\n")
        browser.execute_script("return window.palaestraPoll()")
        button = wait_for(browser, "#live-refresh")
        assert button.text == "2 new rollouts · show"
        button.click()
        wait_drawn(browser, "#/run/0")
        assert len(browser.find_elements("css selector", "#rows-table tbody tr")) == 3
        assert browser.find_element("css selector", "[data-k=rows] .value").text == "3"
        screenshot(browser, "9_live_run")


def test_markup_in_a_models_output_is_shown_as_text_never_run(browser: Any, tmp_path: Path) -> None:
    row = scored(0, "Oslo", 1.0)
    attack = '<img src=x onerror="document.body.dataset.pwned=1"><b>bold</b>'
    row["response"]["output"][-1]["content"][0]["text"] = attack
    row["response"]["output"][1]["name"] = "<script>document.body.dataset.pwned=1</script>"
    path = write_run(tmp_path / "hostile.jsonl", [row])
    with BackgroundServer(viewer_app(open_runs([path]))) as server:
        open_view(browser, server.url + "/", "/rollout/0/0")
        assert browser.find_element("css selector", ".item.assistant .body").text == attack
        assert browser.find_elements("css selector", "#main img, #main b, #main script") == []
        assert browser.execute_script("return document.body.dataset.pwned") is None

"""browser: MiniWoB++'s web tasks in a real headless Chromium, scored by the page itself.

A task names one of MiniWoB++'s pages (``click-button``, ``login-user``, ...) and the seed its
script draws the problem from; the row also holds the instruction that seed makes the page
show, checked against the live page when the rollout starts. Each rollout leases a browser
from the environment's pool (``pool``), loads the page and starts the episode. The model acts
through one set of tools: DOM actions on MiniWoB's element refs (``click``, ``type``,
``select``) and pixel actions on the screenshot (``click_at``, ``type_text``, ``press_key``,
``scroll``), and ``observe``. Every tool answers with the page after the action: the element
list and/or a screenshot as an ``input_image``, as the ``observation`` argument says. The
reward is the page's own (``core.endEpisode``), never palaestra's reading of the page.
"""

from __future__ import annotations

import asyncio
import base64
import random
from collections.abc import Iterator
from typing import Any, ClassVar

from palaestra import (
    ConfigError,
    Environment,
    InvalidTask,
    JsonDict,
    Session,
    ToolError,
    Verdict,
    task_row,
    tool,
)
from palaestra.envs.browser import miniwob
from palaestra.envs.browser.chromium import Browser, chromium_path
from palaestra.envs.browser.oracles import SOLVERS
from palaestra.envs.browser.pool import BrowserPool

OBSERVATIONS = ("both", "screenshot", "dom")
RULES = (
    "You control a web browser showing a small web page (160 x 210 pixels) with a task on "
    "top. Act with the tools: observe shows the page; click, type and select act on an "
    "element by its [ref] from the element list; click_at, type_text, press_key and scroll "
    "act at pixels of the screenshot. Every tool answers with the page after the action. The "
    "page itself decides when the task is done and whether it was done right."
)
SEED_RANGE = 1_000_000
"""Generated tasks draw the page's seed below this."""


def _content(text: str, png: bytes | None) -> list[JsonDict]:
    parts: list[JsonDict] = [{"type": "input_text", "text": text}]
    if png is not None:
        url = "data:image/png;base64," + base64.b64encode(png).decode()
        parts.append({"type": "input_image", "image_url": url, "detail": "auto"})
    return parts


class MiniWoBBrowser(Environment):
    """MiniWoB++ in headless Chromium: the page's reward, DOM and pixel actions as tools,
    screenshots and/or element lists as observations.

    ``observation``: ``both`` (default), ``screenshot`` or ``dom``. ``browsers``: browsers
    alive at once (a rollout beyond waits for one). ``episode_seconds``: the page's own time
    limit per episode (MiniWoB's default of 10 s is for scripted agents). ``pages``: the pages
    ``--num-tasks`` draws from: ``oracle`` (the tasks with a scripted solution), ``all``, or a
    comma list of page names."""

    name = "browser"
    seed_timeout: ClassVar[float] = 300.0
    """A rollout may wait for a free browser, then start one (seconds)."""
    close_timeout: ClassVar[float] = 30.0

    def __init__(
        self,
        observation: str = "both",
        browsers: int = 4,
        episode_seconds: float = 600.0,
        pages: str = "oracle",
    ) -> None:
        if observation not in OBSERVATIONS:
            raise ConfigError(
                f"browser: observation must be one of {', '.join(OBSERVATIONS)}, "
                f"not {observation!r}"
            )
        if not episode_seconds > 0:
            raise ConfigError(f"browser: episode_seconds must be > 0, not {episode_seconds!r}")
        miniwob.miniwob_version()  # a missing package or browser stops the run here, in one line
        chromium_path()
        known = miniwob.page_names()
        if pages == "oracle":
            chosen = sorted(SOLVERS)
        elif pages == "all":
            chosen = known
        else:
            chosen = [page.strip() for page in pages.split(",") if page.strip()]
            unknown = sorted(set(chosen) - set(known))
            if unknown or not chosen:
                raise ConfigError(f"browser: pages: unknown MiniWoB++ pages {unknown}")
        self.observation = observation
        self.episode_seconds = float(episode_seconds)
        self.pages = chosen
        self.pool = BrowserPool(browsers, miniwob.WIDTH, miniwob.HEIGHT)

    # --- the rollout's browser ------------------------------------------------------------

    def seed(self, task: JsonDict) -> Any:
        name, page_seed = _page_of(task)
        browser = self.pool.lease()
        try:
            page = miniwob.open_task(browser, name, page_seed, self.episode_seconds)
        except BaseException:
            self.pool.give_back(browser, broken=True)
            raise
        expected = task.get("utterance")
        if expected is not None and page.utterance != expected:
            self.pool.give_back(browser)
            raise InvalidTask(
                f"browser: {name} with seed {page_seed} shows {page.utterance!r}, "
                f"not the row's {expected!r}"
            )
        return {"browser": browser, "actions": 0, "refused": 0, "last": [], "broken": False}

    def close(self, session: Session) -> None:
        state = session.state
        if isinstance(state, dict) and state.get("browser") is not None:
            browser, state["browser"] = state["browser"], None
            self.pool.give_back(browser, broken=state["broken"])

    async def aclose(self) -> None:
        await asyncio.to_thread(self.pool.close)  # each close waits for its keeper to finish

    def _browser(self, session: Session) -> Browser:
        browser: Browser = session.state["browser"]
        return browser

    def _look(self, session: Session, note: str = "") -> list[JsonDict]:
        """The page as the model sees it: the instruction, the elements and/or a screenshot."""
        browser = self._browser(session)
        try:
            page = miniwob.page_state(browser)
            if page.done:
                return _content(
                    f"{note}The episode is over: the page gave reward {page.raw_reward:g}"
                    + (f" ({page.reason})." if page.reason else "."),
                    None,
                )
            lines = [f"{note}Task: {page.utterance}"]
            if self.observation in ("both", "dom"):
                items = miniwob.elements(browser)
                session.state["last"] = items
                lines.append("Elements ([ref] tag text value @(x,y) centre):")
                lines.append(miniwob.describe(items))
            png = None
            if self.observation in ("both", "screenshot"):
                png = browser.screenshot(miniwob.WIDTH, miniwob.HEIGHT)
                lines.append(
                    f"The screenshot is the page's top left {miniwob.WIDTH} x "
                    f"{miniwob.HEIGHT} pixels; click_at and scroll take its coordinates."
                )
            return _content("\n".join(lines), png)
        except BaseException:
            session.state["broken"] = True
            raise

    def _act(self, session: Session) -> bool:
        """Whether the episode is still on; counts the action."""
        if miniwob.page_state(self._browser(session)).done:
            return False
        session.state["actions"] += 1
        return True

    def _refuse(self, session: Session, why: str) -> ToolError:
        session.state["refused"] += 1
        return ToolError(why)

    def _centre(self, session: Session, ref: int) -> tuple[float, float]:
        where = miniwob.centre_of(self._browser(session), ref, session.state["last"])
        if where is None:
            raise self._refuse(session, f"no element [{ref}] on the page; observe shows the refs")
        return where

    # --- the tools ------------------------------------------------------------------------

    @tool
    def observe(self, session: Session) -> list[JsonDict]:
        """Show the page: the task, its elements with refs, and/or a screenshot."""
        return self._look(session)

    @tool
    def click(self, session: Session, ref: int) -> list[JsonDict]:
        """Click an element (a real mouse click at its centre).

        Args:
            ref: The element's number in brackets in the element list.
        """
        if self._act(session):
            x, y = self._centre(session, ref)
            miniwob.click_at(self._browser(session), x, y)
        return self._look(session)

    @tool
    def type(self, session: Session, ref: int, text: str) -> list[JsonDict]:
        """Click a text field and type into it.

        Args:
            ref: The field's number in brackets in the element list.
            text: What to type.
        """
        if self._act(session):
            x, y = self._centre(session, ref)
            miniwob.click_at(self._browser(session), x, y)
            miniwob.insert_text(self._browser(session), text)
        return self._look(session)

    @tool
    def select(self, session: Session, ref: int, option: str) -> list[JsonDict]:
        """Choose an option of a drop-down list.

        Args:
            ref: The list's number in brackets in the element list.
            option: The option's text.
        """
        if self._act(session):
            problem = miniwob.select_option(self._browser(session), ref, option)
            if problem is not None:
                raise self._refuse(session, f"cannot select {option!r} in [{ref}]: {problem}")
        return self._look(session)

    @tool
    def click_at(self, session: Session, x: int, y: int) -> list[JsonDict]:
        """Click at a point of the screenshot.

        Args:
            x: Pixels from the left edge.
            y: Pixels from the top edge.
        """
        if self._act(session):
            miniwob.click_at(self._browser(session), x, y)
        return self._look(session)

    @tool
    def type_text(self, session: Session, text: str) -> list[JsonDict]:
        """Type text into whatever has the focus (click a field first).

        Args:
            text: What to type.
        """
        if self._act(session):
            miniwob.insert_text(self._browser(session), text)
        return self._look(session)

    @tool
    def press_key(self, session: Session, key: str) -> list[JsonDict]:
        """Press one key: Enter, Tab, Backspace, Delete, Escape, Space, ArrowUp, ArrowDown,
        ArrowLeft, ArrowRight, Home, End, PageUp or PageDown.

        Args:
            key: The key's name.
        """
        if key not in miniwob.KEYS:
            raise self._refuse(session, f"unknown key {key!r}: one of {', '.join(miniwob.KEYS)}")
        if self._act(session):
            miniwob.press_key(self._browser(session), key)
        return self._look(session)

    @tool
    def scroll(self, session: Session, x: int, y: int, dy: int) -> list[JsonDict]:
        """Turn the mouse wheel over a point of the screenshot.

        Args:
            x: Pixels from the left edge.
            y: Pixels from the top edge.
            dy: Pixels to scroll: positive down, negative up.
        """
        if self._act(session):
            miniwob.scroll(self._browser(session), x, y, dy)
        return self._look(session)

    # --- scoring, the oracle, more tasks --------------------------------------------------

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        """The page's own reward: MiniWoB's raw reward when the page ended the episode (a
        failed episode's -1 counts as 0), 0 when it never did."""
        page = miniwob.page_state(self._browser(session))
        return Verdict(
            reward=max(page.raw_reward, 0.0) if page.done else 0.0,
            metrics={
                "page": session.task.get("task_name", ""),
                "done": page.done,
                "raw_reward": page.raw_reward if page.done else None,
                "wob_reward": page.reward if page.done else None,
                "reason": page.reason,
                "actions": session.state["actions"],
                "refused_actions": session.state["refused"],
            },
        )

    def gold_actions(self, task: JsonDict) -> list[list[JsonDict]] | None:
        """palaestra's scripted solution (``oracles``) for the pages that have one, read from
        the page the task's seed draws; None for the others."""
        name, page_seed = _page_of(task)
        solver = SOLVERS.get(name)
        if solver is None:
            return None
        browser = self.pool.lease()
        broken = True
        try:
            page = miniwob.open_task(browser, name, page_seed, self.episode_seconds)
            calls = solver(page.utterance, miniwob.elements(browser))
            broken = False
        finally:
            self.pool.give_back(browser, broken=broken)
        return [calls]

    def generate_tasks(self, count: int, seed: int) -> Iterator[JsonDict]:
        """``count`` tasks: the chosen pages in shuffled rounds, each with a page seed drawn
        from ``seed``; the instruction each makes is read from the page in a browser."""
        rng = random.Random(seed)
        browser = self.pool.lease()
        broken = True
        try:
            made = 0
            while made < count:
                round_ = list(self.pages)
                rng.shuffle(round_)
                for name in round_[: count - made]:
                    page_seed = rng.randrange(SEED_RANGE)
                    page = miniwob.open_task(browser, name, page_seed, self.episode_seconds)
                    yield task(name, page_seed, page.utterance)
                    made += 1
            broken = False
        finally:
            self.pool.give_back(browser, broken=broken)


def _page_of(task: JsonDict) -> tuple[str, int]:
    name, page_seed = task.get("task_name"), task.get("seed")
    if not isinstance(name, str) or not name:
        raise InvalidTask("browser: a task needs 'task_name' (a MiniWoB++ page, e.g. click-button)")
    if not isinstance(page_seed, int) or isinstance(page_seed, bool):
        raise InvalidTask("browser: 'seed' must be a whole number (the page's random seed)")
    if not (miniwob.html_dir() / f"{name}.html").is_file():
        raise InvalidTask(f"browser: MiniWoB++ has no task page {name!r}")
    return name, page_seed


def task(name: str, page_seed: int, utterance: str) -> JsonDict:
    """A task row: the page, its seed, and the instruction that seed makes it show."""
    prompt = f"{utterance}\nThe page is open in the browser; observe shows it."
    return task_row(prompt, system=RULES, task_name=name, seed=page_seed, utterance=utterance)


__all__ = ["OBSERVATIONS", "RULES", "MiniWoBBrowser", "task"]

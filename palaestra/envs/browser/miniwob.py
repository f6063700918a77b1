"""MiniWoB++ pages in a browser: open a task, read what it shows and what it rewards, act on it.

The ``miniwob`` package (Farama Foundation, MIT) ships each task as one HTML page with its own
script: ``genProblem`` draws the problem from ``Math.random`` (seeded with ``Math.seedrandom``),
the page's handlers call ``core.endEpisode(reward)`` and leave the result in the globals
``WOB_DONE_GLOBAL``, ``WOB_RAW_REWARD_GLOBAL`` and ``WOB_REWARD_GLOBAL`` (the raw reward scaled
down by the time taken). Only the package's files are used, from ``file://``; its Python
modules (gymnasium, selenium) are never imported.

Elements are named by MiniWoB's own refs (``core.getDOMInfo`` numbers the visible elements of
an episode in document order; text runs get negative refs), so the page, the observation and
the oracle agree on them.
"""

from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import orjson

from palaestra import ConfigError, EnvironmentFailure, InvalidTask, JsonDict
from palaestra.envs.browser.chromium import Browser

INSTALL = "pip install --no-deps miniwob==1.1.0 (or bash scripts/install.sh)"
WIDTH, HEIGHT = 160, 210
"""MiniWoB's task area (``#wrap``): what the screenshot shows, at the page's top left."""
LOAD_TIMEOUT = 10.0
SETTLE = 0.05
"""Seconds an action waits for the page's handlers before the page is read again."""

_ELEMENTS_JS = """(() => {
  const root = core.getDOMInfo();
  const out = [];
  const walk = (node, depth) => {
    const el = node.ref > 0 ? core.previousDOMInfo[node.ref] : null;
    const item = {ref: node.ref, depth: depth, tag: node.tag, text: node.text || '',
      id: node.id || '', classes: String(node.classes || ''),
      x: Math.round(node.left + node.width / 2), y: Math.round(node.top + node.height / 2)};
    if (node.value !== undefined) item.value = node.value;
    if (node.focused) item.focused = true;
    if (el && el.tagName === 'SELECT')
      item.options = Array.from(el.options).map(o => o.textContent.trim());
    if (el && el.title) item.title = el.title;
    out.push(item);
    node.children.forEach(child => walk(child, depth + 1));
  };
  walk(root, 0);
  return out;
})()"""

_STATE_JS = (
    "({done: WOB_DONE_GLOBAL, reward: WOB_REWARD_GLOBAL, raw_reward: WOB_RAW_REWARD_GLOBAL,"
    " reason: WOB_REWARD_REASON == null ? null : String(WOB_REWARD_REASON),"
    " utterance: core.getUtterance(), episode: WOB_EPISODE_ID})"
)


def html_dir() -> Path:
    """The installed package's ``html/miniwob`` folder; one ConfigError line without it."""
    spec = importlib.util.find_spec("miniwob")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"browser needs MiniWoB++'s pages: {INSTALL}")
    folder = Path(next(iter(spec.submodule_search_locations))) / "html" / "miniwob"
    if not folder.is_dir():
        raise ConfigError(f"browser: the miniwob package has no html/miniwob: {INSTALL}")
    return folder


def miniwob_version() -> str:
    try:
        return metadata.version("miniwob")
    except metadata.PackageNotFoundError:
        raise ConfigError(f"browser needs MiniWoB++'s pages: {INSTALL}") from None


def page_names() -> list[str]:
    """Every task page the package ships (``click-button``, ``enter-text``, ...)."""
    return sorted(page.stem for page in html_dir().glob("*.html"))


@dataclass
class PageState:
    """What the page says of its episode: MiniWoB's globals."""

    done: bool
    reward: float
    raw_reward: float
    reason: str | None
    utterance: str


def open_task(browser: Browser, name: str, seed: int, episode_seconds: float) -> PageState:
    """Load ``name``'s page and start an episode drawn with ``seed``; the page's time limit is
    ``episode_seconds``. Refs are numbered at once, so they exist before the first look."""
    page = html_dir() / f"{name}.html"
    if not page.is_file():
        raise InvalidTask(f"browser: MiniWoB++ has no task page {name!r}")
    browser.call("Page.navigate", {"url": page.as_uri()})
    deadline = time.monotonic() + LOAD_TIMEOUT
    ready = "document.readyState === 'complete' && typeof core === 'object' && !!core.cover_div"
    while not browser.evaluate(ready):
        if time.monotonic() > deadline:
            raise EnvironmentFailure(f"browser: the page {name} did not load")
        time.sleep(0.02)
    browser.evaluate(
        f"Math.seedrandom({int(seed)}); core.setDataMode('train');"
        f" core.EPISODE_MAX_TIME = {int(episode_seconds * 1000)}; core.startEpisodeReal(); 0"
    )
    while not browser.evaluate("WOB_TASK_READY"):
        if time.monotonic() > deadline:
            raise EnvironmentFailure(f"browser: the task {name} never became ready")
        time.sleep(0.02)
    elements(browser)
    return page_state(browser)


def page_state(browser: Browser) -> PageState:
    state: JsonDict = browser.evaluate(_STATE_JS)
    return PageState(
        done=bool(state["done"]),
        reward=float(state["reward"]),
        raw_reward=float(state["raw_reward"]),
        reason=state["reason"],
        utterance=str(state["utterance"]),
    )


def elements(browser: Browser) -> list[JsonDict]:
    """The page's visible elements in document order, with refs, centres, values, options."""
    found: list[JsonDict] = browser.evaluate(_ELEMENTS_JS)
    return found


def describe(items: list[JsonDict]) -> str:
    """The elements as indented lines: ``[ref] tag "text" value=... @(x,y)``."""
    lines = []
    for item in items:
        if item["tag"] == "BODY" or item["id"] in ("wrap", "area"):
            continue
        depth = max(int(item["depth"]) - 2, 0)
        parts = [f"[{item['ref']}]", "text" if item["tag"] == "t" else item["tag"].lower()]
        if item["id"]:
            parts.append(f"#{item['id']}")
        if item.get("title"):
            parts.append(f"title={orjson.dumps(item['title']).decode()}")
        if item["text"]:
            parts.append(orjson.dumps(item["text"]).decode())
        if "value" in item:
            parts.append(f"value={orjson.dumps(item['value']).decode()}")
        if item.get("options"):
            parts.append(f"options={orjson.dumps(item['options']).decode()}")
        if item.get("focused"):
            parts.append("(focused)")
        parts.append(f"@({item['x']},{item['y']})")
        lines.append("  " * depth + " ".join(parts))
    return "\n".join(lines)


# --- actions: real input events at pixels, or script where no event can do it ---------------


def click_at(browser: Browser, x: float, y: float) -> None:
    """A left click at page pixel (x, y): move, press, release, as a mouse does."""
    point = {"x": float(x), "y": float(y)}
    browser.call("Input.dispatchMouseEvent", {"type": "mouseMoved", **point})
    for kind in ("mousePressed", "mouseReleased"):
        browser.call(
            "Input.dispatchMouseEvent",
            {"type": kind, **point, "button": "left", "buttons": 1, "clickCount": 1},
        )
    time.sleep(SETTLE)


def centre_of(browser: Browser, ref: int, last: list[JsonDict]) -> tuple[float, float] | None:
    """Where element ``ref`` is now (scrolled into view), or a text run's last-seen centre."""
    if ref > 0:
        where: Any = browser.evaluate(
            f"(() => {{ const e = document.querySelector('[data-wob_ref=\"{ref}\"]');"
            " if (!e || e.dataset.wob_eps !== 'e' + WOB_EPISODE_ID) return null;"
            " e.scrollIntoView({block: 'nearest'}); const r = e.getBoundingClientRect();"
            " return r.width && r.height ? [r.left + r.width / 2, r.top + r.height / 2] : null;"
            " })()"
        )
        return (float(where[0]), float(where[1])) if where else None
    for item in last:
        if item["ref"] == ref:
            return float(item["x"]), float(item["y"])
    return None


def insert_text(browser: Browser, text: str) -> None:
    """Type ``text`` into the focused element (the page sees input events)."""
    browser.call("Input.insertText", {"text": text})
    time.sleep(SETTLE)


KEYS: dict[str, tuple[str, int, str]] = {
    "Enter": ("Enter", 13, "\r"),
    "Tab": ("Tab", 9, ""),
    "Backspace": ("Backspace", 8, ""),
    "Delete": ("Delete", 46, ""),
    "Escape": ("Escape", 27, ""),
    "ArrowUp": ("ArrowUp", 38, ""),
    "ArrowDown": ("ArrowDown", 40, ""),
    "ArrowLeft": ("ArrowLeft", 37, ""),
    "ArrowRight": ("ArrowRight", 39, ""),
    "Home": ("Home", 36, ""),
    "End": ("End", 35, ""),
    "PageUp": ("PageUp", 33, ""),
    "PageDown": ("PageDown", 34, ""),
    "Space": ("Space", 32, " "),
}
"""The keys ``press_key`` knows: name -> (code, Windows key code, text typed)."""


def press_key(browser: Browser, name: str) -> None:
    code, key_code, text = KEYS[name]
    key = " " if name == "Space" else name
    event = {"key": key, "code": code, "windowsVirtualKeyCode": key_code}
    browser.call("Input.dispatchKeyEvent", {"type": "keyDown", **event, "text": text})
    browser.call("Input.dispatchKeyEvent", {"type": "keyUp", **event})
    time.sleep(SETTLE)


def scroll(browser: Browser, x: float, y: float, dy: float) -> None:
    """A mouse wheel turn of ``dy`` pixels (down when positive) over (x, y)."""
    browser.call(
        "Input.dispatchMouseEvent",
        {"type": "mouseWheel", "x": float(x), "y": float(y), "deltaX": 0, "deltaY": float(dy)},
    )
    time.sleep(SETTLE)


def select_option(browser: Browser, ref: int, option: str) -> str | None:
    """Choose ``option`` (its text or value) in the ``<select>`` ``ref``, with the input and
    change events a user's choice fires (a headless browser draws no native drop-down to
    click). The problem in words, or None when done."""
    script = (
        f"(() => {{ const e = document.querySelector('[data-wob_ref=\"{int(ref)}\"]');"
        " if (!e) return 'no element'; if (e.tagName !== 'SELECT') return 'not a select';"
        f" const want = {orjson.dumps(option).decode()};"
        " const i = Array.from(e.options).findIndex("
        "   o => o.textContent.trim() === want || o.value === want);"
        " if (i < 0) return 'no such option'; e.focus(); e.selectedIndex = i;"
        " e.dispatchEvent(new Event('input', {bubbles: true}));"
        " e.dispatchEvent(new Event('change', {bubbles: true})); return null; })()"
    )
    problem: str | None = browser.evaluate(script)
    time.sleep(SETTLE)
    return problem


__all__ = [
    "HEIGHT",
    "KEYS",
    "WIDTH",
    "PageState",
    "centre_of",
    "click_at",
    "describe",
    "elements",
    "html_dir",
    "insert_text",
    "miniwob_version",
    "open_task",
    "page_names",
    "page_state",
    "press_key",
    "scroll",
    "select_option",
]

"""palaestra's scripted solutions for a stated subset of MiniWoB++ tasks (MiniWoB++ ships
none): each reads the page's instruction and elements, as the model gets them, and returns the
tool calls that solve the episode. They use the DOM actions (``click``, ``type``, ``select``)
with MiniWoB's refs, so they check the reward and the DOM action path together.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from palaestra import InvalidTask, JsonDict

Solver = Callable[[str, list[JsonDict]], list[JsonDict]]


def _call(name: str, **arguments: object) -> JsonDict:
    return {"name": name, "arguments": arguments}


def _quoted(utterance: str, index: int = 0) -> str:
    found = re.findall(r'"([^"]*)"', utterance)
    if len(found) <= index:
        raise InvalidTask(f"browser: no quoted text #{index + 1} in {utterance!r}")
    return str(found[index])


def _find(items: list[JsonDict], test: Callable[[JsonDict], bool], what: str) -> JsonDict:
    for item in items:
        if test(item):
            return item
    raise InvalidTask(f"browser: the page shows no {what}")


def _ref(items: list[JsonDict], test: Callable[[JsonDict], bool], what: str) -> int:
    return int(_find(items, test, what)["ref"])


def _button(items: list[JsonDict], text: str) -> int:
    return _ref(items, lambda e: e["tag"] == "BUTTON" and e["text"] == text, f"{text} button")


def _labelled_input(items: list[JsonDict], label: str, kind: str) -> int:
    """The ``kind`` input inside the label whose text run is ``label`` (checkbox, radio)."""
    for index, item in enumerate(items):
        if item["tag"] == "t" and item["text"] == label and index > 0:
            before = items[index - 1]
            if before["tag"] == f"INPUT_{kind}":
                return int(before["ref"])
    raise InvalidTask(f"browser: no {kind} labelled {label!r}")


def click_button(utterance: str, items: list[JsonDict]) -> list[JsonDict]:
    return [_call("click", ref=_button(items, _quoted(utterance)))]


def click_link(utterance: str, items: list[JsonDict]) -> list[JsonDict]:
    text = _quoted(utterance)
    link = _ref(items, lambda e: e["tag"] == "SPAN" and e["text"] == text, f"link {text!r}")
    return [_call("click", ref=link)]


def enter_text(utterance: str, items: list[JsonDict]) -> list[JsonDict]:
    field = _ref(items, lambda e: e["tag"] == "INPUT_text", "text field")
    submit = _button(items, "Submit")
    return [_call("type", ref=field, text=_quoted(utterance)), _call("click", ref=submit)]


def focus_text(utterance: str, items: list[JsonDict]) -> list[JsonDict]:
    return [_call("click", ref=_ref(items, lambda e: e["tag"] == "INPUT_text", "text field"))]


def _choices(utterance: str) -> list[str]:
    match = re.match(r"Select (.*) and click Submit\.", utterance)
    if match is None:
        raise InvalidTask(f"browser: not a selection instruction: {utterance!r}")
    wanted = match.group(1)
    if wanted == "nothing":
        return []
    return [word for word in re.split(r", (?:and )?| and ", wanted) if word]


def click_checkboxes(utterance: str, items: list[JsonDict]) -> list[JsonDict]:
    calls = [_call("click", ref=_labelled_input(items, w, "checkbox")) for w in _choices(utterance)]
    return [*calls, _call("click", ref=_button(items, "Submit"))]


def click_option(utterance: str, items: list[JsonDict]) -> list[JsonDict]:
    calls = [_call("click", ref=_labelled_input(items, w, "radio")) for w in _choices(utterance)]
    return [*calls, _call("click", ref=_button(items, "Submit"))]


def choose_list(utterance: str, items: list[JsonDict]) -> list[JsonDict]:
    match = re.match(r"Select (.*) from the list and click Submit\.", utterance)
    if match is None:
        raise InvalidTask(f"browser: not a list instruction: {utterance!r}")
    box = _ref(items, lambda e: e["tag"] == "SELECT", "list")
    submit = _button(items, "Submit")
    return [_call("select", ref=box, option=match.group(1)), _call("click", ref=submit)]


def click_dialog(utterance: str, items: list[JsonDict]) -> list[JsonDict]:
    close = _ref(items, lambda e: e["tag"] == "BUTTON" and e.get("title") == "Close", "x")
    return [_call("click", ref=close)]


def login_user(utterance: str, items: list[JsonDict]) -> list[JsonDict]:
    user = _ref(items, lambda e: e["id"] == "username", "username field")
    password = _ref(items, lambda e: e["id"] == "password", "password field")
    return [
        _call("type", ref=user, text=_quoted(utterance, 0)),
        _call("type", ref=password, text=_quoted(utterance, 1)),
        _call("click", ref=_button(items, "Login")),
    ]


def enter_password(utterance: str, items: list[JsonDict]) -> list[JsonDict]:
    first = _ref(items, lambda e: e["id"] == "password", "password field")
    again = _ref(items, lambda e: e["id"] == "verify", "verify field")
    word = _quoted(utterance)
    return [
        _call("type", ref=first, text=word),
        _call("type", ref=again, text=word),
        _call("click", ref=_button(items, "Submit")),
    ]


SOLVERS: dict[str, Solver] = {
    "click-button": click_button,
    "click-link": click_link,
    "enter-text": enter_text,
    "focus-text": focus_text,
    "click-checkboxes": click_checkboxes,
    "click-option": click_option,
    "choose-list": choose_list,
    "click-dialog": click_dialog,
    "login-user": login_user,
    "enter-password": enter_password,
}
"""The tasks with an oracle: MiniWoB++ page name -> its solver."""

__all__ = ["SOLVERS", "Solver"]

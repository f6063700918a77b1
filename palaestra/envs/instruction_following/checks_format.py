"""Checkers for the ``format:`` instructions (see ``checks_counts`` for the form)."""

from __future__ import annotations

import itertools
import re

from palaestra.envs.instruction_following import text as t
from palaestra.envs.instruction_following.checks_counts import Args, Checker

_BULLET = re.compile(r"^\s*[*\-•+]\s")
_PAIRS = {")": "(", "]": "[", "}": "{"}
_QUOTE_KIND = {'"': '"', "\u201c": '"', "\u201d": '"', "'": "'", "\u2018": "'", "\u2019": "'"}


def emoji(text: str, args: Args) -> bool:
    found = t.sentences(text)
    return bool(found) and all(t.ends_with_emoji(s) for s in found)


def line_indent(text: str, args: Args) -> bool:
    """Every line is indented further than the line before it (stairs)."""
    indents = [len(line) - len(line.lstrip()) for line in t.lines(text.expandtabs(4))]
    return len(indents) >= 2 and all(a < b for a, b in itertools.pairwise(indents))


def marker_list(text: str, args: Args) -> bool:
    """At least two lines start with the given marker, and none with an ordinary bullet."""
    marker = str(args["sep"])
    found = [line.strip() for line in t.lines(text)]
    items = [line for line in found if line.startswith(marker)]
    bullets = [line for line in found if _BULLET.match(line) and not line.startswith(marker)]
    return len(items) >= 2 and not bullets


def newline(text: str, args: Args) -> bool:
    """One word per line (lines of punctuation only are ignored)."""
    counts = [len(t.words(line)) for line in t.lines(text)]
    counts = [n for n in counts if n]
    return bool(counts) and all(n == 1 for n in counts)


def no_bullets_bullets(text: str, args: Args) -> bool:
    """Two or more sentences ending in a period, then two or more '*' bullets, then nothing."""
    found = t.lines(text)
    first = next((i for i, line in enumerate(found) if _is_star_bullet(line)), None)
    if first is None:
        return False
    prose = [s for line in found[:first] for s in t.sentences(line)]
    bullets = found[first:]
    return (
        sum(s.endswith(".") for s in prose) >= 2
        and len(bullets) >= 2
        and all(_is_star_bullet(line) for line in bullets)
    )


def _is_star_bullet(line: str) -> bool:
    return re.match(r"^\s*\*\s+\S", line) is not None


def no_whitespace(text: str, args: Args) -> bool:
    stripped = text.strip()
    return bool(stripped) and not any(c.isspace() for c in stripped)


def options(text: str, args: Args) -> bool:
    """The whole answer is one of the options (a letter option may be written as the letter)."""
    raw = str(args["options"])
    if "/" in raw:
        choices = raw.split("/")
    elif " or " in raw:
        choices = raw.split(" or ")
    else:
        choices = raw.split(",")
    answer = _bare(text)
    for choice in (c.strip() for c in choices):
        letter = re.fullmatch(r"\(?([A-Za-z])[).]?", choice)
        if answer == _bare(choice) or (letter and answer == letter.group(1).lower()):
            return True
    return False


def _bare(text: str) -> str:
    return text.replace("\u2019", "'").strip().strip(" .!*\"'()").lower()


def output_template(text: str, args: Args) -> bool:
    """Starts with 'My Answer:', then 'My Conclusion:', then 'Future Outlook:', each filled in."""
    plain = re.sub(r"[*#_]", "", text).strip()
    match = re.fullmatch(
        r"My Answer:(.+?)My Conclusion:(.+?)Future Outlook:(.+)", plain, flags=re.DOTALL
    )
    return match is not None and all(part.strip() for part in match.groups())


def parentheses(text: str, args: Args) -> bool:
    """Some bracket group ((), [], {} in any mix) closes with five levels nested inside it."""
    stack: list[tuple[str, int]] = []  # (opening bracket, deepest closed group inside it)
    deepest = 0
    for char in text:
        if char in "([{":
            stack.append((char, 0))
        elif char in _PAIRS:
            if not stack or stack[-1][0] != _PAIRS[char]:
                stack.clear()  # a stray closing bracket: start counting again
                continue
            depth = 1 + stack.pop()[1]
            deepest = max(deepest, depth)
            if stack:
                stack[-1] = (stack[-1][0], max(stack[-1][1], depth))
    return deepest >= 5


def quotes(text: str, args: Args) -> bool:
    """Quotes nested three deep, alternating double and single quotes; apostrophes ignored."""
    stack: list[tuple[str, int]] = []
    deepest = 0
    for index, char in enumerate(text):
        kind = _QUOTE_KIND.get(char)
        if kind is None or _is_apostrophe(text, index):
            continue
        if stack and stack[-1][0] == kind:
            depth = 1 + stack.pop()[1]
            deepest = max(deepest, depth)
            if stack:
                stack[-1] = (stack[-1][0], max(stack[-1][1], depth))
        else:
            stack.append((kind, 0))
    return deepest >= 3


def _is_apostrophe(text: str, index: int) -> bool:
    if text[index] not in "'\u2019":
        return False
    before = text[index - 1] if index else " "
    after = text[index + 1] if index + 1 < len(text) else " "
    return before.isalnum() and after.isalnum()


def quote_unquote(text: str, args: Args) -> bool:
    """There are quoted phrases, and each is followed by unquoted text before the next quote."""
    plain = text.replace("\u201c", '"').replace("\u201d", '"')
    pieces = plain.split('"')
    if len(pieces) < 3 or len(pieces) % 2 == 0:
        return False  # no quote, or an unclosed one
    between = pieces[2::2]  # what follows each quoted piece
    return all(re.search(r"[^\W_]", piece) for piece in between)


def sub_bullets(text: str, args: Args) -> bool:
    """'*' bullets, each followed by at least one '-' sub-bullet before the next bullet."""
    kinds = []
    for line in t.lines(text):
        if _is_star_bullet(line):
            kinds.append("*")
        elif re.match(r"^\s*-\s+\S", line):
            kinds.append("-")
    if not kinds or kinds[0] != "*":
        return False
    following = [*kinds[1:], "end"]
    return all(after == "-" for kind, after in zip(kinds, following, strict=True) if kind == "*")


def thesis(text: str, args: Args) -> bool:
    """Each section (blank-line separated, headings aside) opens with an HTML-italic thesis."""
    sections = []
    for block in t.paragraphs(text):
        body = "\n".join(line for line in block.splitlines() if not line.lstrip().startswith("#"))
        if body.strip():
            sections.append(body.strip())
    opening = re.compile(r"<(i|em)>(.+?)</\1>", flags=re.DOTALL)
    if not sections:
        return False
    for section in sections:
        match = opening.match(section)
        if match is None or not match.group(2).strip():
            return False
    return bool(re.sub(r"<(i|em)>.*?</\1>", "", text, flags=re.DOTALL).strip(" \n#"))


def title_case(text: str, args: Args) -> bool:
    """Every word starts with a capital; short function words may stay lower case mid-line."""
    for line in t.lines(text):
        for index, word in enumerate(t.words(line)):
            if not word[0].isalpha() or word[0].isupper():
                continue
            if index == 0 or word.lower() not in t.MINOR_WORDS:
                return False
    return bool(t.words(text))


CHECKERS: dict[str, Checker] = {
    "format:emoji": emoji,
    "format:line_indent": line_indent,
    "format:list": marker_list,
    "format:newline": newline,
    "format:no_bullets_bullets": no_bullets_bullets,
    "format:no_whitespace": no_whitespace,
    "format:options": options,
    "format:output_template": output_template,
    "format:parentheses": parentheses,
    "format:quotes": quotes,
    "format:quote_unquote": quote_unquote,
    "format:sub-bullets": sub_bullets,
    "format:thesis": thesis,
    "format:title_case": title_case,
}

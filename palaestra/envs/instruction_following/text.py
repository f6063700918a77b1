"""Text helpers for the instruction checkers: words, sentences, syllables, emoji, word lists.

Everything here is plain Python with no data files: no nltk, no spaCy, nothing downloaded.
Where a checker needs linguistic knowledge (stop words, verbs, syllables) it uses the small
lists and rules below, documented as approximations in the package README.
"""

from __future__ import annotations

import re
import unicodedata

WORD = re.compile(r"\d+(?:[.,]\d+)*|[^\W_]+(?:['\u2019\-][^\W_]+)*")
"""A word: a number (``3.5``, ``1,000``), or letters and digits with inner apostrophes or
hyphens (``don't``, ``well-known``)."""
_EMOJI_CHARS = "\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\u2300-\u23ff\ufe0f\u200d"
_SENTENCE_END = re.compile(rf"[.!?…‽]+[\"'\u201d\u2019)\]]*(?:[ \t]*[{_EMOJI_CHARS}]+)?(?=\s|$)")


def word_list(block: str) -> list[str]:
    """The whitespace-separated words of a literal block: how the lists below are written."""
    return block.split()


_ABBREVIATIONS = frozenset(
    word_list("mr mrs ms dr prof sr jr st vs etc e.g i.e fig no vol inc ltd co approx dept est")
)


def words(text: str) -> list[str]:
    """The words of ``text`` in order (punctuation dropped, case kept)."""
    return WORD.findall(text)


def lower_words(text: str) -> list[str]:
    return [w.lower() for w in words(text)]


def sentences(text: str) -> list[str]:
    """Split ``text`` into sentences.

    A sentence ends at a line break, or at ``.``, ``!``, ``?``, ``…`` or ``‽`` (with any closing
    quotes or brackets and emoji right after them) followed by whitespace. A period after a
    common abbreviation (``Dr.``, ``e.g.``) or a single letter does not end a sentence.
    """
    found: list[str] = []
    for line in text.splitlines():
        start = 0
        for match in _SENTENCE_END.finditer(line):
            before = re.search(r"(\S+)$", line[start : match.start()])
            single_period = re.match(r"\.(?!\.)", match.group()) is not None
            if single_period and before and _is_abbreviation(before.group(1)):
                continue
            piece = line[start : match.end()].strip()
            if piece:
                found.append(piece)
            start = match.end()
        rest = line[start:].strip()
        if rest:
            found.append(rest)
    return found


def _is_abbreviation(token: str) -> bool:
    token = token.lower().rstrip(".")
    return token in _ABBREVIATIONS or (len(token) == 1 and token.isalpha())


def paragraphs(text: str) -> list[str]:
    """Blocks of text separated by blank lines."""
    return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def lines(text: str) -> list[str]:
    """Non-empty lines, with their leading whitespace kept."""
    return [line.rstrip() for line in text.splitlines() if line.strip()]


def strip_code_fence(text: str) -> str:
    """The content of a single fenced block (```csv ... ```) if the text is one; else the text."""
    match = re.fullmatch(r"\s*```[\w+-]*[ \t]*\n(.*?)\n?```\s*", text, flags=re.DOTALL)
    return match.group(1) if match else text.strip()


def ascii_fold(text: str) -> str:
    """``São Tomé`` -> ``Sao Tome``: drop accents for comparisons."""
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


# --- emoji ------------------------------------------------------------------------------------

_EMOJI_RANGES = (
    (0x1F000, 0x1FAFF),  # mahjong .. symbols and pictographs extended-A
    (0x2600, 0x27BF),  # miscellaneous symbols, dingbats
    (0x2B00, 0x2BFF),  # arrows and stars (⭐, ⬆)
    (0x2300, 0x23FF),  # technical (⌚, ⏰)
    (0x1F1E6, 0x1F1FF),  # regional indicators (flags)
)
_EMOJI_JOINERS = frozenset({0xFE0F, 0x200D, 0x20E3}) | set(range(0x1F3FB, 0x1F400))


def is_emoji(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in _EMOJI_RANGES)


def ends_with_emoji(text: str) -> bool:
    """Does ``text`` end with an emoji, ignoring trailing punctuation, spaces and joiners?"""
    for char in reversed(text):
        if char.isspace() or ord(char) in _EMOJI_JOINERS or unicodedata.category(char)[0] == "P":
            continue
        return is_emoji(char)
    return False


# --- Japanese ---------------------------------------------------------------------------------

_JAPANESE = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\u4e00-\u9fff\uff66-\uff9f]")


def has_japanese(text: str) -> bool:
    """Hiragana, katakana or kanji anywhere in ``text``."""
    return _JAPANESE.search(text) is not None


# --- syllables (a rule-based estimate, no dictionary) -----------------------------------------


def syllables(word: str) -> int:
    """Estimated syllables of an English word: vowel groups, less a silent final e."""
    word = re.sub(r"[^a-z]", "", word.lower())
    if not word:
        return 0
    groups = re.findall(r"[aeiouy]+", word)
    count = len(groups)
    if word.endswith("e") and not word.endswith(("le", "ee", "ye")) and count > 1:
        count -= 1
    if word.endswith("le") and len(word) > 2 and word[-3] not in "aeiouy" and count == 0:
        count = 1
    if re.search(r"[^aeiouy]ed$", word) and not re.search(r"[td]ed$", word) and count > 1:
        count -= 1
    return max(count, 1)


# --- word lists -------------------------------------------------------------------------------

STOP_WORDS = frozenset(
    word_list("""
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves""")
)
"""Common English function words (our own list, about 150 words)."""

PRONOUNS = frozenset(
    word_list("""
    i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves""")
)
CONJUNCTIONS = frozenset({"for", "and", "nor", "but", "or", "yet", "so"})
MINOR_WORDS = frozenset(
    word_list(
        "a an the and but or nor for so yet as at by in of off on per to up via vs from into "
        "onto over with"
    )
)

_VERB_BASES = word_list("""
accept achieve add admire admit adopt advise agree aim allow analyze answer
appear apply appreciate approach argue arrange arrive ask assess assume attach attempt avoid
bake balance be bear beat become begin believe belong bend bet bind bite blend blow boil
borrow break breathe bring build burn buy calculate call care carry catch cause celebrate
change check choose claim clean clear climb close collect combine come compare complete
compose consider contain continue contribute control convert cook copy count cover create
cross cry cut dance deal decide declare define deliver demonstrate deny depend describe design
destroy determine develop die dig discover discuss dive do draw dream dress drink drive drop
earn eat embrace emerge enable encourage end enjoy ensure enter escape establish estimate
evaluate examine expand expect experience explain explore express face fail fall feel fight
figure fill find finish fit fix fly focus fold follow forget forgive form gain gather generate
get give go grab grasp grow guess handle hang happen hate have hear help hide hit hold hope
identify ignore imagine implement improve include increase indicate inform insert install
introduce invent investigate invite join judge jump keep kick kill kneel knock know laugh lay
lead lean learn leave lend let lie lift light like limit link listen live look lose love make
manage mark matter mean measure meet mention mind miss mix move name need note notice obtain
offer open order organize outline own paint pass pause pay perform pick picture place plan
play point pour prefer prepare present press prevent print produce promise protect prove
provide pull punch push put question quit raise reach read realize receive recognize
recommend reduce reflect refuse relax release remain remember remove repeat replace reply
report represent require research rest return reveal review ride ring rise roll run save say
search see seek select sell send serve set shake share shine shoot show shut sing sink sit
sleep slide smell smile solve speak spend split spread stand start stay steal step stick stop
study suggest summarize supply support suppose surround survive swim take talk taste teach
tear tell test thank think throw touch train transform translate travel treat try turn
understand unite use visit wait wake walk want wash watch wear win wish wonder work worry
write""")
_IRREGULAR = word_list("""
am is are was were been being has had did does done went gone made took taken
gave given got gotten knew known saw seen said told thought brought bought caught taught found
felt kept left lost meant met paid put read ran sat sent slept spent stood understood won wrote
written became began begun broke broken built chose chosen came drew drawn drank drove driven
ate eaten fell fallen flew flown forgot forgotten froze grew grown heard held hid hidden hung
hurt led laid lay lent lit rode ridden rang rose risen sang sung sank shook shot showed shown
shut sold spoke spoken stole stolen swam swum threw thrown woke wore worn can could may might
must shall should will would let's""")


def _inflections(base: str) -> set[str]:
    stem = base[:-1] if base.endswith("e") else base
    third = base + "es" if base.endswith(("s", "sh", "ch", "x", "z", "o")) else base + "s"
    if base.endswith("y") and base[-2] not in "aeiou":
        third, past = base[:-1] + "ies", base[:-1] + "ied"
    else:
        past = stem + "ed"
    return {base, third, past, stem + "ing"}


VERBS = frozenset(set(_IRREGULAR).union(*(_inflections(b) for b in _VERB_BASES)))
"""About 320 common English verbs with their regular inflections, plus irregular forms and
auxiliaries: what ``words:start_verb`` recognises (a word list, not a part-of-speech tagger)."""

"""Checkers for the one-off ``custom:`` instructions (see ``checks_counts`` for the form).

The facts these need (capitals and their latitudes, the countries of Africa) are written out
here; no data is downloaded.
"""

from __future__ import annotations

import csv
import datetime
import io
import itertools
import re

from palaestra.envs.instruction_following import text as t
from palaestra.envs.instruction_following.checks_counts import Args, Checker

# Capitals of European countries north of 45°N, by latitude (degrees north), with other
# spellings. Kyiv (50.45°N) belongs on the list; IFBench's own checker leaves it out.
EUROPEAN_CAPITALS_NORTH_OF_45 = (
    ("reykjavik", 64.15, ()),
    ("helsinki", 60.17, ()),
    ("oslo", 59.91, ()),
    ("tallinn", 59.44, ()),
    ("stockholm", 59.33, ()),
    ("riga", 56.95, ()),
    ("moscow", 55.76, ()),
    ("copenhagen", 55.68, ()),
    ("vilnius", 54.69, ()),
    ("minsk", 53.90, ()),
    ("dublin", 53.35, ()),
    ("berlin", 52.52, ()),
    ("amsterdam", 52.37, ()),
    ("warsaw", 52.23, ()),
    ("london", 51.51, ()),
    ("brussels", 50.85, ()),
    ("kyiv", 50.45, ("kiev",)),
    ("prague", 50.08, ()),
    ("luxembourg", 49.61, ("luxembourg city",)),
    ("paris", 48.86, ()),
    ("vienna", 48.21, ()),
    ("bratislava", 48.15, ()),
    ("budapest", 47.50, ()),
    ("vaduz", 47.14, ()),
    ("chisinau", 47.01, ()),
    ("bern", 46.95, ("berne",)),
    ("ljubljana", 46.06, ()),
    ("zagreb", 45.81, ()),
)

# The 54 UN member states in Africa; other names of a country follow its name after '='.
_COUNTRY_NAMES = {
    name: group
    for group in [
        *t.word_list(
            "algeria angola benin botswana burundi cameroon chad comoros djibouti egypt eritrea "
            "ethiopia gabon ghana guinea guinea-bissau kenya lesotho liberia libya madagascar "
            "malawi mali mauritania mauritius morocco mozambique namibia niger nigeria rwanda "
            "senegal seychelles somalia sudan tanzania togo tunisia uganda zambia zimbabwe"
        ),
        "burkina faso",
        "cabo verde=cape verde",
        "central african republic",
        "democratic republic of the congo=dr congo=drc=congo-kinshasa=dem. rep. congo",
        "republic of the congo=congo=congo-brazzaville=congo republic",
        "cote d'ivoire=ivory coast",
        "equatorial guinea",
        "eswatini=swaziland",
        "gambia=the gambia",
        "sao tome and principe",
        "sierra leone",
        "south africa",
        "south sudan",
    ]
    for name in group.split("=")
}
NUMBER_OF_AFRICAN_COUNTRIES = 54


def _folded(text: str) -> str:
    return " ".join(t.ascii_fold(text).lower().replace("\u2019", "'").split())


def european_capitals_sort(text: str, args: Args) -> bool:
    """The capitals north of 45°N, comma-separated, from the northernmost down, and only them."""
    names = {
        alias: name
        for name, _, aliases in EUROPEAN_CAPITALS_NORTH_OF_45
        for alias in (name, *aliases)
    }
    given = [_folded(part).strip(" .") for part in t.strip_code_fence(text).split(",")]
    given = [g for g in given if g]
    expected = [name for name, _, _ in EUROPEAN_CAPITALS_NORTH_OF_45]
    return [names.get(g, f"?{g}") for g in given] == expected


def reverse_newline(text: str, args: Args) -> bool:
    """Every country of Africa, one per line, in reverse alphabetical order of the names used.

    Numbering or bullets before a name are allowed, and so is a heading line ending in ':'.
    """
    written: list[str] = []
    for line in t.lines(t.strip_code_fence(text)):
        name = _folded(re.sub(r"^\s*(?:\d+[.)]|[-*•])\s*", "", line)).strip(" .,;*")
        if name in _COUNTRY_NAMES:
            written.append(name)
        elif not line.rstrip().endswith(":"):
            return False
    countries = [_COUNTRY_NAMES[name] for name in written]
    return (
        len(countries) == NUMBER_OF_AFRICAN_COUNTRIES
        and len(set(countries)) == NUMBER_OF_AFRICAN_COUNTRIES
        and written == sorted(written, reverse=True)
    )


def csv_city(text: str, args: Args) -> bool:
    rows = _csv_rows(text, ",")
    header = ["ID", "Country", "City", "Year", "Count"]
    return len(rows) == 8 and rows[0] == header and all(len(r) == 5 for r in rows)


def csv_special_character(text: str, args: Args) -> bool:
    """14 rows under the given header, and some field double-quoted with a special character."""
    body = t.strip_code_fence(text)
    rows = _csv_rows(body, ",")
    header = ["ProductID", "Category", "Brand", "Price", "Stock"]
    if len(rows) != 15 or rows[0] != header or any(len(r) != 5 for r in rows):
        return False
    quoted = re.findall(r'(?:^|,)\s*"((?:[^"]|"")*)"\s*(?=,|$)', body, flags=re.MULTILINE)
    return any(re.search(r"[^\w\s]", field) for field in quoted)


def csv_quotes(text: str, args: Args) -> bool:
    """Tab-separated, the given header and 3 rows, every field wrapped in double quotes."""
    raw = t.lines(t.strip_code_fence(text))
    if len(raw) != 4:
        return False
    fields = [line.strip().split("\t") for line in raw]
    if any(len(row) != 5 for row in fields):
        return False
    if not all(
        len(f.strip()) >= 2 and f.strip()[0] == f.strip()[-1] == '"' for row in fields for f in row
    ):
        return False
    return [f.strip().strip('"') for f in fields[0]] == [
        "StudentID",
        "Subject",
        "Grade",
        "Semester",
        "Score",
    ]


def _csv_rows(text: str, delimiter: str) -> list[list[str]]:
    reader = csv.reader(
        io.StringIO(t.strip_code_fence(text)), delimiter=delimiter, skipinitialspace=True
    )
    try:
        return [[cell.strip() for cell in row] for row in reader if any(c.strip() for c in row)]
    except csv.Error:
        return []


def date_format_list(text: str, args: Args) -> bool:
    """Comma-separated real dates as YYYY-MM-DD within Napoleon's campaigns (1793-1815).

    Whether each date is a battle of Napoleon's is not checked: only the format and range.
    """
    parts = [p.strip() for p in text.strip().rstrip(".").split(",")]
    if len(parts) < 2:
        return False
    for part in parts:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", part):
            return False
        try:
            day = datetime.date.fromisoformat(part)
        except ValueError:
            return False
        if not 1793 <= day.year <= 1815:
            return False
    return True


def mcq_count_length(text: str, args: Args) -> bool:
    """4 'Question' blocks, 5 options (A-E) each, each question longer than the one before."""
    plain = re.sub(r"[*#]", "", text).strip()
    if not plain.startswith("Question"):
        return False
    blocks = re.split(r"(?m)^\s*Question\b[^\n]*?(?:\d+\s*[.:)]?)?\s*[:.]?", plain)
    blocks = [b for b in blocks if b.strip()]
    if len(blocks) != 4:
        return False
    lengths = []
    for block in blocks:
        stem, option_letters = [], []
        for line in block.strip().splitlines():
            option = re.match(r"^\s*\(?([A-Ea-e])[).]\s*\S", line)
            if option:
                option_letters.append(option.group(1).upper())
            elif not option_letters:
                stem.append(line.strip())
        if option_letters != list("ABCDE"):
            return False
        lengths.append(len(" ".join(stem).strip()))
    return all(a < b for a, b in itertools.pairwise(lengths))


def multiples(text: str, args: Args) -> bool:
    """Only the multiples of 7 between 10 and 50, in order: 14 21 28 35 42 49."""
    return re.findall(r"\d+", text) == ["14", "21", "28", "35", "42", "49"]


def sentence_alphabet(text: str, args: Args) -> bool:
    """26 sentences whose first words start with a, b, c, ... z in order."""
    firsts = [t.lower_words(s) for s in t.sentences(text)]
    return len(firsts) == 26 and all(
        words and words[0][0] == chr(ord("a") + i) for i, words in enumerate(firsts)
    )


def word_reverse(text: str, args: Args) -> bool:
    """The answer's words in reverse order: 'eagle bald', not 'bald eagle'."""
    spoken = " ".join(t.lower_words(text))
    return "eagle bald" in spoken and "bald eagle" not in spoken


CHECKERS: dict[str, Checker] = {
    "custom:csv_city": csv_city,
    "custom:csv_quotes": csv_quotes,
    "custom:csv_special_character": csv_special_character,
    "custom:date_format_list": date_format_list,
    "custom:european_capitals_sort": european_capitals_sort,
    "custom:mcq_count_length": mcq_count_length,
    "custom:multiples": multiples,
    "custom:reverse_newline": reverse_newline,
    "custom:sentence_alphabet": sentence_alphabet,
    "custom:word_reverse": word_reverse,
}

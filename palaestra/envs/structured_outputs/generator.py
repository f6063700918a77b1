"""Seeded structured-output tasks: a random schema over a theme, in one of the five formats."""

from __future__ import annotations

import json
import random

from palaestra import JsonDict, task_row
from palaestra.envs.structured_outputs.documents import FORMATS, JsonSchema

_STRING: JsonSchema = {"type": "string"}
_INTEGER: JsonSchema = {"type": "integer"}
_NUMBER: JsonSchema = {"type": "number"}
_BOOLEAN: JsonSchema = {"type": "boolean"}
_STRINGS: JsonSchema = {"type": "array", "items": _STRING, "minItems": 1}

THEMES: dict[str, dict[str, JsonSchema]] = {
    "book": {
        "title": _STRING,
        "author": _STRING,
        "year": {"type": "integer", "minimum": 1450, "maximum": 2030},
        "pages": {"type": "integer", "minimum": 1},
        "rating": {"type": "number", "minimum": 0, "maximum": 5},
        "in_print": _BOOLEAN,
        "genres": _STRINGS,
        "format": {"type": "string", "enum": ["hardcover", "paperback", "ebook"]},
    },
    "city": {
        "name": _STRING,
        "country": _STRING,
        "population": {"type": "integer", "minimum": 0},
        "area_km2": _NUMBER,
        "is_capital": _BOOLEAN,
        "districts": _STRINGS,
        "climate": {"type": "string", "enum": ["arid", "temperate", "tropical", "polar"]},
        "mayor": {
            "type": "object",
            "properties": {"name": _STRING, "since": _INTEGER},
        },
    },
    "product": {
        "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
        "name": _STRING,
        "price": {"type": "number", "exclusiveMinimum": 0},
        "stock": {"type": "integer", "minimum": 0},
        "available": _BOOLEAN,
        "tags": _STRINGS,
        "category": {"type": "string", "enum": ["tools", "garden", "kitchen", "toys"]},
    },
    "recipe": {
        "dish": _STRING,
        "servings": {"type": "integer", "minimum": 1, "maximum": 20},
        "minutes": _INTEGER,
        "vegetarian": _BOOLEAN,
        "ingredients": _STRINGS,
        "difficulty": {"type": "string", "enum": ["easy", "medium", "hard"]},
        "calories": _NUMBER,
    },
    "employee": {
        "id": _INTEGER,
        "full_name": _STRING,
        "email": {"type": "string", "pattern": "^[^@ ]+@[^@ ]+$"},
        "salary": _NUMBER,
        "remote": _BOOLEAN,
        "skills": _STRINGS,
        "manager": {
            "type": "object",
            "properties": {"full_name": _STRING, "id": _INTEGER},
        },
    },
}

_HOW_TO_WRITE = {
    "json": "Reply with the JSON document only.",
    "yaml": "Reply with the YAML document only.",
    "toml": "Reply with the TOML document only (top-level keys, [tables] for objects).",
    "xml": (
        "Reply with the XML document only: one root element named <{theme}>, each property as a "
        "child element, and each array as one element holding an <item> element per value."
    ),
    "csv": (
        "Reply with the CSV only: a header row with the property names, then one row per "
        "{theme}, comma-separated."
    ),
}


def make_task(rng: random.Random) -> JsonDict:
    theme = rng.choice(sorted(THEMES))
    fmt = rng.choice(FORMATS)
    fields = THEMES[theme]
    if fmt == "csv":  # a table holds scalars only
        fields = {k: v for k, v in fields.items() if v["type"] not in ("array", "object")}
    chosen = sorted(rng.sample(sorted(fields), rng.randint(2, min(5, len(fields)))))
    item: JsonSchema = {
        "type": "object",
        "properties": {name: fields[name] for name in chosen},
        "required": chosen,
        "additionalProperties": False,
    }
    schema: JsonSchema = item
    subject = f"{'an' if theme[0] in 'aeiou' else 'a'} {theme}"
    if fmt == "csv":
        rows = rng.randint(2, 4)
        schema = {"type": "array", "items": item, "minItems": rows, "maxItems": rows}
        subject = f"{rows} {theme}s"
    prompt = (
        f"Make up {subject} and write it as {fmt.upper()} that matches this JSON Schema exactly: "
        f"every property present, no other properties.\n\n"
        f"{json.dumps(schema, indent=2)}\n\n{_HOW_TO_WRITE[fmt].format(theme=theme)}"
    )
    return task_row(prompt, schema=schema, format=fmt)

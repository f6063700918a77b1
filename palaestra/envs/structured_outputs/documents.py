"""Answer text -> data, per format, and the strict form of a JSON Schema.

JSON, YAML and TOML parse to data directly. XML and CSV only hold text, so their values are
read against the schema: where the schema says integer, number, boolean or null, the text is
converted (``"42"`` -> ``42``); text that does not convert stays a string and fails validation.

XML: the root element is the top-level value (its tag is free). An object's properties are
child elements (or attributes); an array property is either repeated child elements of that
name or one element whose children are the items (``<tags><item>a</item>...</tags>``).
CSV: a header row of property names, then one row per item; the top-level value is the array
of row objects. An empty cell is null where the schema allows null, else the empty string.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import re
import tomllib
from typing import Any
from xml.etree import ElementTree

import yaml

from palaestra import code_blocks

FORMATS = ("json", "yaml", "toml", "xml", "csv")
JsonSchema = dict[str, Any]


class ParseError(ValueError):
    """The answer is not a document of the required format."""


def answer_body(text: str) -> str:
    """The document in an answer: the content of its one fenced block if it has exactly one
    (```json ... ```), else the whole text."""
    blocks = code_blocks(text)
    return blocks[0].code.strip() if len(blocks) == 1 else text.strip()


def parse(text: str, fmt: str, schema: JsonSchema) -> Any:
    """Parse ``text`` as ``fmt``; raise ``ParseError`` when it is not such a document."""
    try:
        if fmt == "json":
            return json.loads(text)
        if fmt == "yaml":
            return yaml.load(text, Loader=_NoAliasLoader)  # a SafeLoader subclass
        if fmt == "toml":
            return tomllib.loads(text)
        if fmt == "xml":
            return _element_value(ElementTree.fromstring(text), schema)
        if fmt == "csv":
            return _csv_value(text, schema)
    except (ValueError, yaml.YAMLError, ElementTree.ParseError, csv.Error, RecursionError) as error:
        raise ParseError(f"not valid {fmt}: {_first_line(error)}") from None
    raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]


class _NoAliasLoader(yaml.SafeLoader):
    """YAML without anchors and aliases: a few aliases can expand into a huge document."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise yaml.YAMLError("YAML aliases (*name) are not accepted")
        return super().compose_node(parent, index)


# --- text-only formats, read against the schema ----------------------------------------------


def _types(schema: JsonSchema) -> set[str]:
    kind = schema.get("type")
    return {kind} if isinstance(kind, str) else set(kind or [])


def _scalar(text: str | None, schema: JsonSchema) -> Any:
    text = (text or "").strip()
    types = _types(schema)
    if "null" in types and text in ("", "null"):
        return None
    if "boolean" in types and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if "integer" in types and re.fullmatch(r"[-+]?\d+", text):
        return int(text)
    if "number" in types and re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text):
        number = float(text)
        return int(number) if number.is_integer() and "." not in text else number
    return text


def _element_value(element: ElementTree.Element, schema: JsonSchema) -> Any:
    types = _types(schema)
    children = list(element)
    if "object" in types or (not types and children):
        properties = schema.get("properties", {})
        value: dict[str, Any] = {
            name: _scalar(text, properties.get(name, {})) for name, text in element.attrib.items()
        }
        for tag in dict.fromkeys(child.tag for child in children):
            same = [c for c in children if c.tag == tag]
            sub = properties.get(tag, {})
            if "array" in _types(sub):
                value[tag] = _array_items(same, sub)
            else:
                value[tag] = (
                    _element_value(same[0], sub)
                    if len(same) == 1
                    else [_element_value(c, {}) for c in same]
                )
        return value
    if "array" in types:
        return [_element_value(c, schema.get("items", {})) for c in children]
    return _scalar(element.text, schema)


def _array_items(elements: list[ElementTree.Element], schema: JsonSchema) -> list[Any]:
    """Repeated elements are the items, or one wrapper element holds them as its children."""
    items = schema.get("items", {})
    item_fields = set(items.get("properties", {}))
    if len(elements) == 1 and len(elements[0]) and not {c.tag for c in elements[0]} <= item_fields:
        elements = list(elements[0])
    return [_element_value(e, items) for e in elements]


def _csv_value(text: str, schema: JsonSchema) -> list[dict[str, Any]]:
    rows = [row for row in csv.reader(io.StringIO(text)) if any(c.strip() for c in row)]
    if not rows:
        raise ValueError("no header row")
    header = [name.strip() for name in rows[0]]
    properties = schema.get("items", {}).get("properties", {})
    table = []
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise ValueError(f"row {number} has {len(row)} fields, the header {len(header)}")
        table.append(
            {
                name: _scalar(cell, properties.get(name, {}))
                for name, cell in zip(header, row, strict=True)
            }
        )
    return table


# --- strict schemas ---------------------------------------------------------------------------

_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")


def strict_schema(schema: JsonSchema) -> JsonSchema:
    """A copy where every object requires all its properties and allows no others (unless the
    schema says otherwise for ``additionalProperties``)."""
    strict = copy.deepcopy(schema)
    _tighten(strict)
    return strict


def _tighten(schema: Any) -> None:
    if not isinstance(schema, dict):
        return
    properties = schema.get("properties")
    if isinstance(properties, dict):
        schema["required"] = sorted(set(schema.get("required", [])) | set(properties))
        schema.setdefault("additionalProperties", False)
    for key in _SUBSCHEMA_MAPS:
        for sub in (schema.get(key) or {}).values():
            _tighten(sub)
    for key in _SUBSCHEMA_LISTS:
        for sub in schema.get(key) or []:
            _tighten(sub)
    for key in ("items", "additionalProperties", "not", "if", "then", "else"):
        _tighten(schema.get(key))

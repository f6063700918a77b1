"""Open Responses' own schemas, from packages: what a Response, a row or a stream must satisfy.

Two sources of the same spec version, both installed by the dev extra:

- the spec's OpenAPI document, as ``llm-comply`` (a compliance tester) ships it: every Response
  and every streamed event is validated with ``jsonschema`` against its component schema (an
  event's schema is the one whose ``type`` enum names it);
- ``openresponses-types``: pydantic models generated from the same document, whose
  ``ResponseResource`` and event models parse what the servers sent.

``response_problems`` and ``stream_problems`` return one line per problem (empty: conformant),
so a failing test names every field that is wrong.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any

import openresponses_types
import orjson
from jsonschema import Draft202012Validator
from pydantic import BaseModel, ValidationError
from referencing import Registry, Resource

from palaestra.wire.open_responses import SPEC_VERSION, TERMINAL_EVENTS


def spec_path() -> Path:
    """The spec's OpenAPI document as the ``llm-comply`` package ships it."""
    spec = importlib.util.find_spec("llm_comply")
    assert spec is not None and spec.origin is not None, "llm-comply is not installed"
    return Path(spec.origin).parent / "specs" / "openresponses.json"


@functools.cache
def _document() -> dict[str, Any]:
    document: dict[str, Any] = orjson.loads(spec_path().read_bytes())
    return document


def spec_versions() -> tuple[str, str]:
    """(the OpenAPI document's version, openresponses-types' spec version)."""
    return str(_document()["info"]["version"]), str(openresponses_types.__spec_version__)


@functools.cache
def _validator(name: str) -> Draft202012Validator:
    document = _document()
    registry: Registry[Any] = Registry().with_resource(
        "urn:openresponses", Resource.from_contents(document, default_specification=_draft())
    )
    schema = {"$ref": f"urn:openresponses#/components/schemas/{name}"}
    return Draft202012Validator(schema, registry=registry)


def _draft() -> Any:
    from referencing.jsonschema import DRAFT202012

    return DRAFT202012


@functools.cache
def event_schemas() -> dict[str, str]:
    """Streamed event ``type`` -> the name of its schema in the document."""
    named: dict[str, str] = {}
    for name, schema in _document()["components"]["schemas"].items():
        if not name.endswith("StreamingEvent") or name.startswith("WebSocket"):
            continue
        for kind in schema["properties"]["type"].get("enum", ()):
            named[kind] = name
    return named


def _schema_problems(value: Any, name: str, where: str) -> list[str]:
    problems = []
    for error in _validator(name).iter_errors(value):
        path = ".".join(str(part) for part in error.absolute_path)
        problems.append(f"{where}{'.' + path if path else ''}: {error.message[:300]}")
    model: type[BaseModel] | None = getattr(openresponses_types, name, None)
    if model is not None:
        try:
            model.model_validate(value)
        except ValidationError as error:
            problems.append(f"{where}: openresponses_types.{name}: {str(error)[:600]}")
    return problems


def response_problems(response: Any, where: str = "response") -> list[str]:
    """Why ``response`` is not a ``ResponseResource`` of the spec (empty when it is)."""
    return _schema_problems(response, "ResponseResource", where)


def error_problems(error: Any, where: str = "error") -> list[str]:
    """Why an error answer's ``error`` object is not the spec's ``ErrorPayload``."""
    return _schema_problems(error, "ErrorPayload", where)


def parse_stream(raw: bytes) -> tuple[list[tuple[str | None, str]], list[str]]:
    """The (``event:`` name, ``data:``) blocks of a server-sent event stream, and problems."""
    blocks: list[tuple[str | None, str]] = []
    problems: list[str] = []
    for text in raw.decode().replace("\r\n", "\n").split("\n\n"):
        if not text.strip():
            continue
        name, data = None, []
        for line in text.split("\n"):
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
            elif field == "id":
                problems.append(f"an event carries an id ({value}): the spec says not to")
        blocks.append((name, "\n".join(data)))
    return blocks, problems


def stream_problems(raw: bytes) -> tuple[list[dict[str, Any]], list[str]]:
    """The events of a streamed answer, and every way it breaks the spec's streaming rules.

    Checked: each event validates against its schema; ``event:`` matches its ``type``;
    sequence numbers count up from 0 with no gap; the stream opens with ``response.created``
    and ``response.in_progress``; every item is added before it is streamed and done; exactly
    one terminal event, agreeing with its Response's status, comes last before the literal
    ``[DONE]``; the items done are the terminal Response's output, in order.
    """
    blocks, problems = parse_stream(raw)
    if not blocks or blocks[-1][1] != "[DONE]":
        problems.append("the stream does not end with data: [DONE]")
    else:
        blocks = blocks[:-1]
    events: list[dict[str, Any]] = []
    open_items: set[int] = set()
    done_items: list[Any] = []
    for position, (name, data) in enumerate(blocks):
        event = orjson.loads(data)
        events.append(event)
        kind = event.get("type")
        where = f"event {position} ({kind})"
        if name != kind:
            problems.append(f"{where}: event: {name!r} does not match its type")
        if event.get("sequence_number") != position:
            problems.append(f"{where}: sequence_number {event.get('sequence_number')}")
        schema = event_schemas().get(str(kind))
        if schema is None:
            problems.append(f"{where}: not an event type of the spec")
            continue
        problems.extend(_schema_problems(event, schema, where))
        index = event.get("output_index")
        if kind == "response.output_item.added":
            open_items.add(index)
        elif kind == "response.output_item.done":
            if index not in open_items:
                problems.append(f"{where}: item {index} done before it was added")
            open_items.discard(index)
            done_items.append(event.get("item"))
        elif index is not None and index not in open_items:
            problems.append(f"{where}: streams item {index}, which is not open")
    kinds = [event.get("type") for event in events]
    if kinds[:2] != ["response.created", "response.in_progress"]:
        problems.append(f"the stream opens with {kinds[:2]}")
    terminals = [k for k in kinds if k in TERMINAL_EVENTS.values()]
    if len(terminals) != 1 or kinds[-1:] != terminals:
        problems.append(f"terminal events {terminals}, last event {kinds[-1:]}")
    elif events:
        final = events[-1]["response"]
        if TERMINAL_EVENTS.get(final.get("status"), "response.completed") != kinds[-1]:
            problems.append(f"{kinds[-1]} carries a Response {final.get('status')}")
        if final.get("output") != done_items:
            problems.append("the items done are not the terminal Response's output")
    if open_items:
        problems.append(f"items {sorted(open_items)} were never done")
    return events, problems


def check_versions() -> None:
    """Both schema packages carry the spec version palaestra says it conforms to."""
    assert spec_versions() == (SPEC_VERSION, SPEC_VERSION), spec_versions()

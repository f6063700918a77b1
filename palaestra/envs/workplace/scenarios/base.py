"""What every scenario uses: the office's rows as dicts, who is who, and gold calls."""

from __future__ import annotations

import random
from collections.abc import Callable

from palaestra import JsonDict
from palaestra.envs.workplace.store import TABLES, Office

Made = tuple[str, list[JsonDict]] | None
"""A scenario's request and gold calls; None when it does not fit the office."""
Scenario = Callable[[random.Random, Office], Made]


def records(o: Office, table: str) -> list[JsonDict]:
    return [dict(zip(TABLES[table], row, strict=True)) for row in o.tables[table]]


def names(o: Office) -> dict[str, str]:
    """Email address -> person's name, for colleagues and customers."""
    people = {str(e["email"]): str(e["name"]) for e in records(o, "employees")}
    return people | {str(c["email"]): str(c["name"]) for c in records(o, "customers")}


def gold(name: str, **arguments: object) -> JsonDict:
    return {"name": name, "arguments": arguments}

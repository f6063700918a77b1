"""``palaestra plugins``: every environment, agent and model backend palaestra can find."""

from __future__ import annotations

import inspect

import click
from rich.console import Console
from rich.table import Table


@click.command("plugins")
def plugins_command() -> None:
    """List the environments, agents and model backends found: built-in and plug-ins.

    Plug-ins are installed packages' entry points in the groups palaestra.environments,
    palaestra.agents and palaestra.models. A plug-in that fails to load is one warning line.
    """
    from palaestra.agents.registry import AGENTS
    from palaestra.environment.finding.registry import environments
    from palaestra.models.backends import MODEL_BACKENDS

    table = Table(show_header=True, header_style="bold", box=None)
    for column in ("family", "name", "source", "description"):
        table.add_column(column)
    problems: list[str] = []
    for family, registry in (
        ("environment", environments()),
        ("agent", AGENTS),
        ("model backend", MODEL_BACKENDS),
    ):
        found, broken = registry.available()
        problems += broken
        for plugin in found:
            table.add_row(family, plugin.name, plugin.source, _first_line(plugin.value))
    Console().print(table)
    for problem in problems:
        Console(stderr=True).print(f"[yellow]warning:[/] {problem}", highlight=False)


def _first_line(value: object) -> str:
    described = getattr(value, "description", None)
    if isinstance(described, str) and described:
        return described
    doc = inspect.getdoc(value) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""

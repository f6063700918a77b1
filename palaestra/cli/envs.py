"""``palaestra envs``: the environments palaestra can find."""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table

from palaestra.environment.registry import available_environments


@click.command("envs")
def envs_command() -> None:
    """List the environments found: built-in and entry-point plug-ins."""
    entries, problems = available_environments()
    table = Table(show_header=True, header_style="bold", box=None)
    table.add_column("name")
    table.add_column("tools")
    table.add_column("description")
    table.add_column("source")
    for entry in entries:
        tools = _tools_text(list(entry.environment.tool_specs))
        table.add_row(entry.name, tools, entry.description, entry.source)
    console = Console()
    console.print(table)
    for problem in problems:
        Console(stderr=True).print(f"[yellow]warning:[/] {problem}", highlight=False)


def _tools_text(names: list[str], shown: int = 4) -> str:
    if not names:
        return "-"
    if len(names) <= shown:
        return ", ".join(names)
    return f"{', '.join(names[: shown - 1])}, ... ({len(names)} tools)"

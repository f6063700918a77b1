"""``palaestra view``: browse rollout files in a local web page."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.markup import escape

from palaestra.cli.errors import exit_on_user_error
from palaestra.cli.serve.servers import host_option, port_option, read_token, with_token_options

if TYPE_CHECKING:
    from palaestra.viewer import Run


@click.command("view")
@click.argument("rollouts", nargs=-1, required=True, type=click.Path(path_type=Path))
@host_option
@port_option
@with_token_options("Require this token (in the page's URL, or as a bearer header).")
@click.option(
    "--open", "open_browser", is_flag=True, help="Open the page in this machine's browser."
)
def view_command(
    rollouts: tuple[Path, ...],
    host: str,
    port: int,
    token: str | None,
    token_file: Path | None,
    open_browser: bool,
) -> None:
    """Browse a rollouts file (or two, side by side) on a local web page.

    ROLLOUTS: runs/x.jsonl, and optionally runs/y.jsonl to compare them task by task. The
    failures file beside each (runs/x_failures.jsonl) is read too. ATIF trajectories are read
    as well: a .json file of one, or a directory of them (`palaestra export --format atif`,
    Harbor's trajectory.json). Stop with Ctrl-C.
    """
    from palaestra.run.atif import readable_runs
    from palaestra.viewer import view

    console = Console(stderr=True)

    given: dict[str, Path] = {}

    def ready(url: str, runs: list[Run]) -> None:
        for run in runs:
            summary = run.index.summary()
            shown = given.get(str(run.path), run.path)  # an ATIF path, not its decoded copy
            console.print(
                f"indexed {escape(str(shown))}: {summary['rows']:,} rows "
                f"({summary['scored']:,} scored, {summary['failed']:,} failed) "
                f"in {run.seconds_to_index:.2f} s",
                highlight=False,
                soft_wrap=True,
            )
            if summary["unreadable_count"]:
                first = summary["unreadable"][0]
                console.print(
                    f"[yellow]warning:[/] {summary['unreadable_count']} lines are not rows and "
                    f"are left out, the first: {escape(first['file'])}:{first['line']} "
                    f"({escape(first['why'])})",
                    highlight=False,
                    soft_wrap=True,
                )
        print(f"viewing on {url}  (Ctrl-C to stop)", flush=True)

    with exit_on_user_error(console), readable_runs(rollouts) as runs:
        given.update({str(run): path for run, path in zip(runs, rollouts, strict=True)})
        try:
            view(
                runs,
                host=host,
                port=port,
                token=read_token(token, token_file),
                open_browser=open_browser,
                on_ready=ready,
            )
        except KeyboardInterrupt:  # Ctrl-C is how a viewer is closed: not an error
            console.print("stopped", highlight=False)

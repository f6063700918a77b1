"""``palaestra harbor``: Harbor task folders beside Harbor's own runner."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

import click

from palaestra.authoring import harbor_parity as parity


@click.group("harbor")
def harbor_group() -> None:
    """Harbor task folders: compare palaestra's runs with Harbor's own."""


@harbor_group.command("parity")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--sample", type=click.IntRange(min=1), default=None, help="Tasks to run (all).")
@click.option("--seed", type=int, default=0, show_default=True, help="The sample's seed.")
@click.option(
    "--sandbox",
    type=click.Choice(["rootfs", "docker"]),
    default="rootfs",
    show_default=True,
    help="palaestra's provider.",
)
@click.option(
    "--harbor",
    "harbor_command",
    type=click.Path(path_type=Path),
    default=None,
    help="Harbor's `harbor` command (default: the peer venv's).",
)
@click.option("--name", default=None, help="The benchmark's name (default: PATH's name).")
@click.option(
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="Write OUTPUT.md (the table) and OUTPUT.json (parity_experiment.json).",
)
@click.option("--timeout", type=float, default=1800.0, show_default=True, help="Per Harbor trial.")
def harbor_parity_command(
    path: Path,
    sample: int | None,
    seed: int,
    sandbox: str,
    harbor_command: Path | None,
    name: str | None,
    output: Path | None,
    timeout: float,
) -> None:
    """Run each task of PATH (a task folder, a folder or an archive of them) with Harbor's
    runner (oracle, nop) and palaestra's (oracle, null) and write whether the rewards agree.
    Exits 1 when a task's rewards differ."""
    harbor = harbor_command or parity.default_harbor()
    problem = parity.harbor_missing(harbor)
    if problem is not None:
        raise click.ClickException(problem)
    path = path.resolve()
    folders = parity.task_folders(path, sample, seed)
    if not folders:
        raise click.ClickException(f"{path} holds no task folder (no task.toml)")
    size = len(parity.task_folders(path, None, seed))
    version = parity.harbor_version(harbor)
    results: list[parity.TaskParity] = []

    def written() -> str:
        """The table so far, and with ``--output`` its files (a stopped run keeps them)."""
        table = parity.table(results)
        if output is not None:
            notes = (
                f"{version} (its Docker environment through docker-compose, offline) against "
                f"palaestra (sandbox={sandbox}); {len(results)} of {size} tasks, seed {seed}"
            )
            entries = parity.experiment(name or path.name, results, size, notes)
            output.parent.mkdir(parents=True, exist_ok=True)
            output.with_suffix(".md").write_text(table + "\n")
            output.with_suffix(".json").write_text(json.dumps(entries, indent=2) + "\n")
        return table

    with (
        tempfile.TemporaryDirectory(prefix="palaestra-harbor-parity-") as scratch,
        parity.built_images_kept(folders),
    ):
        work = Path(scratch)
        for folder in folders:
            harbor_scores = {
                agent: parity.harbor_score(harbor, folder, agent, work, timeout)
                for agent, _ in parity.PAIRS
            }
            ours = asyncio.run(parity.palaestra_scores(folder, sandbox))[folder.name]
            results.append(parity.TaskParity(folder.name, harbor_scores, ours))
            same = all(results[-1].same(h, p) for h, p in parity.PAIRS)
            click.echo(f"{'same' if same else 'DIFF'} {written().splitlines()[-1]}", err=True)
    click.echo(written())
    if not all(r.same(h, p) for r in results for h, p in parity.PAIRS):
        raise SystemExit(1)

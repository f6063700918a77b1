"""The API reference (mkdocs.yml, docs/) fails its build on a reference to nothing.

Each test builds a one-page site with the project's own mkdocs.yml (its plugins and options),
reading palaestra's sources from this checkout: about a second per build.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent


def build_one_page(tmp_path: Path, page: str) -> subprocess.CompletedProcess[str]:
    """Build the project's docs config over a single ``page`` (no --strict on the command)."""
    config: dict[str, Any] = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text(page)
    config["docs_dir"] = str(docs)
    config["site_dir"] = str(tmp_path / "site")
    config["nav"] = [{"Home": "index.md"}]
    for plugin in config["plugins"]:
        if isinstance(plugin, dict) and "mkdocstrings" in plugin:
            plugin["mkdocstrings"]["handlers"]["python"]["paths"] = [str(ROOT)]
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--config-file", str(tmp_path / "mkdocs.yml")],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )


def test_a_page_documenting_a_public_name_builds(tmp_path: Path) -> None:
    built = build_one_page(tmp_path, "# Verdict\n\n::: palaestra.Verdict\n")

    assert built.returncode == 0, built.stderr
    assert "palaestra.Verdict.reward" in (tmp_path / "site" / "index.html").read_text()


def test_a_page_documenting_a_name_that_does_not_exist_fails_the_build(tmp_path: Path) -> None:
    built = build_one_page(tmp_path, "# Gone\n\n::: palaestra.does_not_exist\n")

    assert built.returncode != 0
    assert "palaestra.does_not_exist" in built.stderr


def test_a_link_to_a_name_that_does_not_exist_fails_the_build_as_the_config_is_strict(
    tmp_path: Path,
) -> None:
    # A dangling cross-reference is only a warning to mkdocs: the build fails because the
    # project's config turns warnings into errors, not because the command asks for it.
    built = build_one_page(tmp_path, "# Link\n\nSee [the nothing][palaestra.nothing_here].\n")

    assert built.returncode != 0
    assert "palaestra.nothing_here" in built.stderr

"""The generic plug-in registry: lazy built-ins, entry points of installed distributions, and
broken plug-ins reported in one line each."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from palaestra._util.plugins import Registry
from palaestra.errors import ConfigError
from tests.support.distribution import on_sys_path, write_distribution

GROUP = "palaestra.test_widgets"


def _widget(value: object, where: str) -> type:
    if not isinstance(value, type):
        raise ConfigError(f"{where} is not a class")
    return value


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Path]:
    """Two built-in modules and an installed distribution with good and broken widgets."""
    (tmp_path / "builtin_one.py").write_text("class One: pass\n")
    (tmp_path / "builtin_two.py").write_text("class Two: pass\n")
    write_distribution(
        tmp_path,
        "widget-pack",
        modules={
            "widget_pack.py": "class Gadget: pass\n\nnot_a_class = 3\n",
            "widget_boom.py": "raise RuntimeError('first line\\nsecond line')\n",
        },
        entry_points={
            GROUP: {
                "gadget": "widget_pack:Gadget",
                "number": "widget_pack:not_a_class",
                "gone": "widget_pack:Missing",
                "boom": "widget_boom:Anything",
                "one": "widget_pack:Gadget",
            },
            "palaestra.other_group": {"stranger": "widget_pack:Gadget"},
        },
    )
    with on_sys_path(tmp_path):
        yield tmp_path


def registry() -> Registry[type]:
    return Registry("widget", GROUP, {"one": "builtin_one:One", "two": "builtin_two:Two"}, _widget)


def test_built_ins_are_imported_only_when_loaded(site: Path) -> None:
    widgets = registry()
    assert widgets.has("one") and widgets.has("gadget") and not widgets.has("stranger")
    assert widgets.names()[:2] == ["one", "two"]
    assert "builtin_one" not in sys.modules and "builtin_two" not in sys.modules
    two = widgets.load("two")
    assert (two.name, two.source, two.value.__name__) == ("two", "built-in", "Two")
    assert "builtin_one" not in sys.modules


def test_an_installed_distributions_entry_points_are_found_by_name(site: Path) -> None:
    widgets = registry()
    assert widgets.names() == ["one", "two", "gadget", "number", "gone", "boom"]
    gadget = widgets.load("gadget")
    assert gadget.source == "plug-in widget_pack:Gadget"
    assert gadget.value.__module__ == "widget_pack" and gadget.value.__name__ == "Gadget"


def test_broken_plugins_are_reported_by_available_one_line_each(site: Path) -> None:
    found, problems = registry().available()
    assert [plugin.name for plugin in found] == ["one", "two", "gadget"]
    assert all("\n" not in line for line in problems)
    assert problems == [
        "widget 'number' (widget_pack:not_a_class) is not a class",
        "widget 'gone' (widget_pack:Missing) failed to load: AttributeError: module "
        "'widget_pack' has no attribute 'Missing'",
        "widget 'boom' (widget_boom:Anything) failed to load: RuntimeError: first line second line",
        "widget 'one' of plug-in widget_pack:Gadget (widget-pack 0.1) is ignored: a built-in has "
        "that name",
    ]


def test_a_built_in_wins_over_a_plugin_of_the_same_name(site: Path) -> None:
    assert registry().load("one").value.__name__ == "One"


def test_an_unknown_name_lists_the_known_ones(site: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        registry().load("sprocket")
    assert str(caught.value) == (
        "unknown widget 'sprocket'; known: one, two, gadget, number, gone, boom"
    )


def test_two_distributions_claiming_one_name_are_an_error_naming_both(site: Path) -> None:
    write_distribution(
        site,
        "rival-pack",
        modules={"rival_pack.py": "class Gadget: pass\n"},
        entry_points={GROUP: {"gadget": "rival_pack:Gadget"}},
    )
    with pytest.raises(ConfigError) as caught:
        registry().load("gadget")
    message = str(caught.value)
    assert message.startswith("widget 'gadget' is claimed by ")
    assert "widget_pack:Gadget (widget-pack 0.1)" in message
    assert "rival_pack:Gadget (rival-pack 0.1)" in message
    assert registry().names().count("gadget") == 1

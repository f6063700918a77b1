"""Hand-written YAML read strictly: a repeated key is named, everything else reads as before."""

from __future__ import annotations

import pytest
import yaml

from palaestra._util.yaml_files import load_yaml
from palaestra.errors import ConfigError


def test_a_document_reads_as_safe_load_reads_it_with_the_line_of_each_key() -> None:
    text = "base: &b {x: 1}\nlist:\n  - {y: 2}\nmerged:\n  <<: *b\n  z: 3\nloop: &l [1, *l]\n"
    loaded = load_yaml(text, "f.yaml")
    expected = yaml.safe_load(text)
    assert loaded.value["merged"] == expected["merged"] == {"x": 1, "z": 3}
    assert loaded.value["loop"][1] is loaded.value["loop"]  # a recursive alias is walked once
    assert loaded.lines == {
        "base": 1,
        "base.x": 1,
        "list": 2,
        "list.0.y": 3,
        "merged": 4,
        "merged.z": 6,
        "loop": 7,
    }
    assert load_yaml("", "f.yaml").value is None


def test_keys_equal_as_text_but_not_as_values_are_two_keys() -> None:
    assert load_yaml("1: int\n'1': text\n", "f.yaml").value == {1: "int", "1": "text"}


def test_a_key_given_twice_names_the_file_the_line_and_the_path() -> None:
    with pytest.raises(
        ConfigError, match=r"^f\.yaml:4: field 'a\.b': given twice \(first at line 2\)"
    ):
        load_yaml("a:\n  b: 1\n  c: 2\n  b: 3\n", "f.yaml")

"""YAML a user writes by hand, read strictly: a key given twice is an error, not the last one.

PyYAML keeps the last of two equal keys in a mapping without a word, so a stack file that
names a server twice silently runs one of them. ``load_yaml`` reads the same documents as
``yaml.safe_load`` but refuses a repeated key in one line naming the file, the line and the
key's dotted path, and says on which line each key was written (``Loaded.lines``) so a
later check can name the line too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from palaestra.errors import ConfigError

_MERGE = "tag:yaml.org,2002:merge"


@dataclass(frozen=True, slots=True)
class Loaded:
    """A YAML document's value and the line (from 1) of each mapping key, by dotted path."""

    value: Any
    lines: dict[str, int] = field(default_factory=dict)


def load_yaml(text: str, where: str) -> Loaded:
    """Read ``text`` as ``yaml.safe_load`` does; ``where`` names it in errors.

    Raises ``yaml.YAMLError`` for text that is not YAML, ``ConfigError`` (one line:
    ``<where>:<line>: field '<dotted.key>': given twice ...``) for a repeated key.
    """
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return Loaded(None)
        lines: dict[str, int] = {}
        _walk(node, "", lines, where, set())
        return Loaded(loader.construct_document(node), lines)
    finally:
        loader.dispose()


def _walk(node: yaml.Node, path: str, lines: dict[str, int], where: str, above: set[int]) -> None:
    """Check ``node``'s mappings; ``above`` holds the nodes being walked (an alias may name
    one of them: a recursive document is walked once)."""
    if id(node) in above or not isinstance(node, yaml.SequenceNode | yaml.MappingNode):
        return
    above.add(id(node))
    if isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, f"{path}.{index}" if path else str(index), lines, where, above)
    else:
        _mapping(node, path, lines, where, above)
    above.discard(id(node))


def _mapping(
    node: yaml.MappingNode, path: str, lines: dict[str, int], where: str, above: set[int]
) -> None:
    seen: dict[tuple[str, str], int] = {}
    for key, value in node.value:
        if key.tag == _MERGE:
            continue
        line = key.start_mark.line + 1
        name = str(key.value) if isinstance(key, yaml.ScalarNode) else f"<key at line {line}>"
        dotted = f"{path}.{name}" if path else name
        if (key.tag, name) in seen:
            raise ConfigError(
                f"{where}:{line}: field '{dotted}': given twice (first at line "
                f"{seen[key.tag, name]}); each key may appear once"
            )
        seen[key.tag, name] = lines[dotted] = line
        _walk(value, dotted, lines, where, above)

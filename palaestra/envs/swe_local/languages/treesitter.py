"""Small, plausible bugs put into one function of a Go or Rust file, found with a real parser.

The same recipe as ``mutations.py`` for Python, over tree-sitter's syntax trees (the optional
``swe-gen`` extra: ``tree-sitter``, ``tree-sitter-go``, ``tree-sitter-rust``). Each operator
finds *sites* in a function's body and rewrites one of them as a minimal byte edit of the
file (the node's exact span), so the diff a task ships is one or two lines, the file keeps its
comments and layout, and the fix is the reverse edit. An edit is kept only if the result
still parses without an error node.

The kinds (a task names its kind; the issue text never does):

- ``compare``: a flipped comparison (``<`` and ``<=``, ``==`` and ``!=``, ...)
- ``arith``: a swapped arithmetic operator (``+`` and ``-``, ``*`` and ``/``, ``<<``, ...)
- ``swap_operands``: the operands of a non-commutative operator swapped (``a - b`` to ``b - a``)
- ``constant``: an integer literal off by one
- ``flip_bool``: a ``true`` or ``false`` literal flipped (a changed default or flag)
- ``drop_if``: an ``if`` without ``else`` removed (a dropped branch or early return)
- ``swap_args``: the first two arguments of a call swapped
- ``boolop``: ``&&`` and ``||`` swapped
- ``drop_not``: a ``!`` removed
- ``drop_call``: a call made for its effect (a statement of its own) removed

Whether the result compiles is the generator's business (a mutation that does not is
discarded there).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

KINDS = (
    "compare",
    "arith",
    "swap_operands",
    "constant",
    "flip_bool",
    "drop_if",
    "swap_args",
    "boolop",
    "drop_not",
    "drop_call",
)

_COMPARE = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}
_ARITH = {
    "+": "-",
    "-": "+",
    "*": "/",
    "/": "*",
    "%": "/",
    "<<": ">>",
    ">>": "<<",
    "&": "|",
    "|": "&",
}
_BOOL = {"&&": "||", "||": "&&"}
_NOT_COMMUTATIVE = frozenset({"-", "/", "%", "<<", ">>", "<", "<=", ">", ">="})
_INTEGER = re.compile(rb"([0-9][0-9_]*)([iu](?:8|16|32|64|128|size))?")
"""A decimal integer literal, with Rust's optional type suffix (hex, octal and binary are
left alone: off by one there is rarely a plausible slip)."""


@dataclass(frozen=True)
class Grammar:
    """What the operators need to know of one language's tree-sitter grammar."""

    name: str
    loader: Callable[[], Any]
    """The grammar package's ``language()`` (imported on first use: an optional extra)."""
    functions: frozenset[str]
    if_type: str
    int_type: str
    bool_types: frozenset[str]


GO = Grammar(
    name="go",
    loader=lambda: __import__("tree_sitter_go").language(),
    functions=frozenset({"function_declaration", "method_declaration"}),
    if_type="if_statement",
    int_type="int_literal",
    bool_types=frozenset({"true", "false"}),
)
RUST = Grammar(
    name="rust",
    loader=lambda: __import__("tree_sitter_rust").language(),
    functions=frozenset({"function_item"}),
    if_type="if_expression",
    int_type="integer_literal",
    bool_types=frozenset({"boolean_literal"}),
)


@cache
def parser(grammar: Grammar) -> Any:
    """A tree-sitter parser of ``grammar``'s language."""
    try:
        from tree_sitter import Language, Parser
    except ImportError:  # pragma: no cover - the extra is missing
        raise SystemExit("tree-sitter is not installed: pip install 'palaestra[swe-gen]'") from None
    return Parser(Language(grammar.loader()))


def parse(grammar: Grammar, source: bytes) -> Any:
    """The syntax tree of ``source``."""
    return parser(grammar).parse(source)


@dataclass(frozen=True)
class Edit:
    """Replace the bytes ``start:end`` of the file with ``text``."""

    start: int
    end: int
    text: bytes


@dataclass(frozen=True)
class Function:
    """A function or method of a file: its qualified name and where it is."""

    name: str
    """``Type.method`` or ``function``."""
    start: int
    end: int
    line: int
    """Its first line (1-based)."""
    lines: int
    node: Any


@dataclass(frozen=True)
class Mutation:
    """One candidate bug: its kind, where, and the edits that make it."""

    kind: str
    function: str
    line: int
    edits: tuple[Edit, ...]

    @property
    def key(self) -> str:
        """A stable name of this mutation within its file."""
        return f"{self.kind}@{self.line}:{self.edits[0].start}"


def _owner(grammar: Grammar, node: Any) -> str:
    """The type a method belongs to (``""`` for a free function)."""
    if grammar is GO:
        receiver = node.child_by_field_name("receiver")
        if receiver is None:
            return ""
        names = [n for n in _walk(receiver) if n.type == "type_identifier"]
        return names[0].text.decode() if names else ""
    parent = node.parent
    while parent is not None:
        if parent.type in ("impl_item", "trait_item"):
            kind = parent.child_by_field_name("type") or parent.child_by_field_name("name")
            if kind is None:
                return ""
            names = [kind, *_walk(kind)]
            found = [n for n in names if n.type == "type_identifier"]
            return found[0].text.decode() if found else ""
        if parent.type in grammar.functions:
            return ""
        parent = parent.parent
    return ""


def _walk(node: Any) -> Iterator[Any]:
    """Every node under ``node`` (not itself), depth first, in source order."""
    stack = list(reversed(node.children))
    while stack:
        child = stack.pop()
        yield child
        stack.extend(reversed(child.children))


def functions(grammar: Grammar, source: bytes) -> list[Function]:
    """Every function and method of ``source`` with a body, in source order (Rust: not
    those inside a ``#[cfg(test)]`` module or marked ``#[test]``)."""
    tree = parse(grammar, source)
    found: list[Function] = []
    for node in _walk(tree.root_node):
        if node.type not in grammar.functions or node.child_by_field_name("body") is None:
            continue
        if grammar is RUST and _in_test_code(node):
            continue
        name = node.child_by_field_name("name")
        if name is None:
            continue
        owner = _owner(grammar, node)
        qualified = f"{owner}.{name.text.decode()}" if owner else name.text.decode()
        found.append(
            Function(
                name=qualified,
                start=node.start_byte,
                end=node.end_byte,
                line=node.start_point[0] + 1,
                lines=node.end_point[0] - node.start_point[0] + 1,
                node=node,
            )
        )
    return found


def _attributes(node: Any) -> list[str]:
    """The text of the attributes right before ``node`` (Rust's ``#[...]``)."""
    found: list[str] = []
    sibling = node.prev_named_sibling
    while sibling is not None and sibling.type in ("attribute_item", "line_comment"):
        if sibling.type == "attribute_item":
            found.append(sibling.text.decode())
        sibling = sibling.prev_named_sibling
    return found


def _in_test_code(node: Any) -> bool:
    """Whether a Rust item is a test or sits in a ``#[cfg(test)]`` module."""
    here: Any = node
    while here is not None:
        if here.type in ("function_item", "mod_item"):
            attributes = " ".join(_attributes(here))
            if "#[test]" in attributes or re.search(r"cfg\((?:[^)]*\b)?test\b", attributes):
                return True
        here = here.parent
    return False


def _operator(node: Any) -> Any:
    """The operator token of a binary or unary expression."""
    found = node.child_by_field_name("operator")
    if found is not None:
        return found
    return next((child for child in node.children if not child.is_named), None)


def _sites(grammar: Grammar, node: Any) -> Iterator[tuple[str, tuple[Edit, ...]]]:
    """The mutations of one node."""
    kind = node.type
    if kind == "binary_expression":
        operator = _operator(node)
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if operator is None or left is None or right is None:
            return
        text = operator.text.decode()
        for table, name in ((_COMPARE, "compare"), (_ARITH, "arith"), (_BOOL, "boolop")):
            if text in table:
                new = table[text].encode()
                yield name, (Edit(operator.start_byte, operator.end_byte, new),)
        if text in _NOT_COMMUTATIVE and left.text != right.text:
            yield (
                "swap_operands",
                (
                    Edit(left.start_byte, left.end_byte, right.text),
                    Edit(right.start_byte, right.end_byte, left.text),
                ),
            )
    elif kind == "unary_expression":
        operator = _operator(node)
        if operator is not None and operator.text == b"!":
            operand = node.named_children[-1] if node.named_children else None
            if operand is not None:
                yield "drop_not", (Edit(node.start_byte, node.end_byte, operand.text),)
    elif kind == grammar.int_type:
        match = _INTEGER.fullmatch(node.text)
        if match is not None:
            value = int(match.group(1).replace(b"_", b""))
            changed = value + 1 if value in (0, 1) or (node.start_byte % 2 == 0) else value - 1
            text = str(changed).encode() + (match.group(2) or b"")
            yield "constant", (Edit(node.start_byte, node.end_byte, text),)
    elif kind in grammar.bool_types:
        new = b"false" if node.text == b"true" else b"true"
        if node.text in (b"true", b"false"):
            yield "flip_bool", (Edit(node.start_byte, node.end_byte, new),)
    elif kind == grammar.if_type:
        if node.child_by_field_name("alternative") is None:
            statement = node.parent if grammar is RUST else node
            if statement is not None and (
                grammar is GO or statement.type == "expression_statement"
            ):
                yield "drop_if", (Edit(statement.start_byte, statement.end_byte, b""),)
    elif kind == "call_expression":
        arguments = node.child_by_field_name("arguments")
        values = arguments.named_children if arguments is not None else []
        values = [v for v in values if v.type not in ("comment", "line_comment", "block_comment")]
        if len(values) >= 2 and values[0].text != values[1].text:
            first, second = values[0], values[1]
            yield (
                "swap_args",
                (
                    Edit(first.start_byte, first.end_byte, second.text),
                    Edit(second.start_byte, second.end_byte, first.text),
                ),
            )
    elif kind == "expression_statement":
        inner = node.named_children[0] if node.named_children else None
        if inner is not None and inner.type == "call_expression":
            end = node.end_byte
            if grammar is RUST and not node.text.rstrip().endswith(b";"):
                return  # the block's value, not a statement
            yield "drop_call", (Edit(node.start_byte, end, b""),)


def mutations(grammar: Grammar, source: bytes, function: Function) -> list[Mutation]:
    """Every mutation of ``function`` in ``source``, in a stable order; those whose result
    does not parse cleanly are left out."""
    body = function.node.child_by_field_name("body")
    found: list[Mutation] = []
    seen: set[str] = set()
    for node in _walk(body):
        for kind, edits in _sites(grammar, node):
            mutation = Mutation(kind, function.name, node.start_point[0] + 1, edits)
            if mutation.key in seen:
                continue
            changed = apply(source, mutation)
            if changed == source or parse(grammar, changed).root_node.has_error:
                continue
            seen.add(mutation.key)
            found.append(mutation)
    return found


def apply(source: bytes, mutation: Mutation) -> bytes:
    """``source`` with ``mutation``'s edits made (the last first, so offsets hold)."""
    for edit in sorted(mutation.edits, key=lambda e: e.start, reverse=True):
        source = source[: edit.start] + edit.text + source[edit.end :]
    return source


def digest(*parts: str) -> str:
    """Eight hex digits naming a mutation (stable across runs)."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:8]

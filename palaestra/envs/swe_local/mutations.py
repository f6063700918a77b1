"""Small, plausible bugs put into one function of a Python module (SWE-smith's procedural recipe).

Each operator finds *sites* in a function's AST and rewrites one of them as a minimal text edit
of the module's source (the node's exact span, from ``ast`` positions), so the diff a task ships
is one or two lines, the file keeps its comments and layout, and the fix is the reverse edit.
An edit is kept only if the result still parses and its AST differs from the original's.

The operators (a task's metadata names the kind; the issue text never does):

- ``compare``: a flipped comparison (``<`` and ``<=``, ``==`` and ``!=``, ``in``, ``is``, ...)
- ``arith``: a swapped arithmetic operator (``+`` and ``-``, ``*`` and ``/``, ``//`` and ``%``, ...)
- ``constant``: an integer literal off by one (a constant, or a ``range`` bound)
- ``drop_if``: an ``if`` statement without ``else`` removed (a dropped branch or early return)
- ``swap_args``: the first two positional arguments of a call swapped
- ``boolop``: ``and`` and ``or`` swapped
- ``drop_not``: a ``not`` removed
- ``swap_operands``: the operands of an ordering comparison or a non-commutative operator
  swapped (``a < b`` to ``b < a``, ``a - b`` to ``b - a``)
- ``off_by_one``: a slice bound that is not a literal moved by one (``x[:n]`` to ``x[:n - 1]``)
- ``changed_default``: a parameter's default changed (``True``/``False`` flipped, an integer
  moved by one)
- ``drop_call``: a call made for its effect (a statement of its own) removed

The generator picks, per function, a kind uniformly among those with a site, then a site of it
(the stated mix); ``combined`` tasks join two validated ones (``worker``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

KINDS = (
    "compare",
    "arith",
    "constant",
    "drop_if",
    "swap_args",
    "boolop",
    "drop_not",
    "swap_operands",
    "off_by_one",
    "changed_default",
    "drop_call",
)
_ORDERED = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_NOT_COMMUTATIVE = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift)

_COMPARE_FLIP: dict[type[ast.cmpop], tuple[str, str]] = {
    ast.Lt: ("<", "<="),
    ast.LtE: ("<=", "<"),
    ast.Gt: (">", ">="),
    ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="),
    ast.NotEq: ("!=", "=="),
    ast.Is: ("is", "is not"),
    ast.IsNot: ("is not", "is"),
    ast.In: ("in", "not in"),
    ast.NotIn: ("not in", "in"),
}
_ARITH_SWAP: dict[type[ast.operator], tuple[str, str]] = {
    ast.Add: ("+", "-"),
    ast.Sub: ("-", "+"),
    ast.Mult: ("*", "/"),
    ast.Div: ("/", "*"),
    ast.FloorDiv: ("//", "%"),
    ast.Mod: ("%", "//"),
    ast.LShift: ("<<", ">>"),
    ast.RShift: (">>", "<<"),
    ast.BitAnd: ("&", "|"),
    ast.BitOr: ("|", "&"),
}
_NO_SWAP = frozenset(
    {"isinstance", "issubclass", "getattr", "setattr", "hasattr", "super", "print"}
)
"""Calls whose swapped arguments are a ``TypeError`` at once, never a plausible bug."""


@dataclass(frozen=True)
class Edit:
    """Replace the text between two (line, column) positions (1-based lines, 0-based UTF-8
    byte columns, as ``ast`` gives them) with ``text``."""

    start: tuple[int, int]
    end: tuple[int, int]
    text: str


@dataclass(frozen=True)
class Mutation:
    """One candidate bug: its kind, where, and the edits that make it."""

    kind: str
    function: str
    """The qualified name of the function mutated (``Class.method`` or ``function``)."""
    line: int
    """The line of the site (in the original source)."""
    edits: tuple[Edit, ...]

    @property
    def key(self) -> str:
        """A stable name of this mutation within its module."""
        first = self.edits[0]
        return f"{self.kind}@{self.line}:{first.start[1]}"


def functions(source: str) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method of ``source``, with its qualified name, in source order."""
    found: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                found.append((name, child))
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")

    visit(ast.parse(source), "")
    return found


def mutations(
    source: str, name: str, function: ast.FunctionDef | ast.AsyncFunctionDef
) -> list[Mutation]:
    """Every mutation of ``function`` (named ``name``) in ``source``, in a stable order; those
    whose result would not parse or would not change the AST are left out."""
    original = ast.dump(ast.parse(source))
    kept: list[Mutation] = []
    seen: set[str] = set()
    for mutation in sites(source, name, function):
        if mutation.key not in seen and valid(source, mutation, original):
            seen.add(mutation.key)
            kept.append(mutation)
    return kept


def sites(
    source: str, name: str, function: ast.FunctionDef | ast.AsyncFunctionDef
) -> list[Mutation]:
    """The candidate mutations of ``function`` in a stable order, not yet checked (``valid``;
    two may share a key): checking one parses the whole module, so a caller that needs one
    mutation checks only those it draws."""
    lines = source.splitlines(keepends=True)
    found: list[Mutation] = []
    body = [node for statement in function.body for node in ast.walk(statement)]
    for node in body:
        for kind, edits in _sites(node, lines):
            found.append(Mutation(kind, name, getattr(node, "lineno", function.lineno), edits))
    if len(function.body) > 1:  # the function's own statements (a nested block's: _sites)
        for statement in function.body:
            edit = _drop_statement(statement, lines)
            if edit is not None:
                kind = "drop_if" if isinstance(statement, ast.If) else "drop_call"
                found.append(Mutation(kind, name, statement.lineno, (edit,)))
    for default in [*function.args.defaults, *function.args.kw_defaults]:
        if default is None:
            continue
        edit = _default(default, lines)
        if edit is not None:
            found.append(Mutation("changed_default", name, default.lineno, (edit,)))
    return found


def valid(source: str, mutation: Mutation, original: str) -> bool:
    """Whether ``mutation`` of ``source`` parses and changes its AST (``original``: the
    ``ast.dump`` of ``source``'s)."""
    try:
        tree = ast.parse(apply(source, mutation))
    except (SyntaxError, ValueError):
        return False
    return ast.dump(tree) != original


def apply(source: str, mutation: Mutation) -> str:
    """``source`` with ``mutation``'s edits made (the last first, so positions hold)."""
    lines = [line.encode() for line in source.splitlines(keepends=True)]
    for edit in sorted(mutation.edits, key=lambda e: e.start, reverse=True):
        (start_line, start_col), (end_line, end_col) = edit.start, edit.end
        head = lines[start_line - 1][:start_col]
        tail = lines[end_line - 1][end_col:]
        lines[start_line - 1 : end_line] = [head + edit.text.encode() + tail]
    return b"".join(lines).decode()


def _segment(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> str:
    encoded = [line.encode() for line in lines[start[0] - 1 : end[0]]]
    if not encoded:
        return ""
    if len(encoded) == 1:
        return encoded[0][start[1] : end[1]].decode()
    encoded[0] = encoded[0][start[1] :]
    encoded[-1] = encoded[-1][: end[1]]
    return b"".join(encoded).decode()


def _start(node: ast.AST) -> tuple[int, int]:
    return (node.lineno, node.col_offset)  # type: ignore[attr-defined]


def _end(node: ast.AST) -> tuple[int, int]:
    end_line, end_col = node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]
    if end_line is None or end_col is None:
        raise ValueError("node without an end position")
    return (end_line, end_col)


def _between(lines: list[str], left: ast.AST, right: ast.AST, old: str, new: str) -> Edit | None:
    """The edit replacing operator ``old`` by ``new`` in the text between two operands, when
    that text is only the operator, spaces and parentheses (no comment, no line break)."""
    start, end = _end(left), _start(right)
    if start[0] != end[0]:
        return None
    gap = _segment(lines, start, end)
    match = re.fullmatch(r"([\s)]*)" + re.escape(old).replace(r"\ ", r"\s+") + r"([\s(]*)", gap)
    if match is None:
        return None
    return Edit(start, end, f"{match.group(1)}{new}{match.group(2)}")


def _sites(node: ast.AST, lines: list[str]) -> list[tuple[str, tuple[Edit, ...]]]:
    sites: list[tuple[str, tuple[Edit, ...]]] = []
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], _ORDERED):
        sites.extend(_swap_operands(node.left, node.comparators[0], lines))
    binop = isinstance(node, ast.BinOp) and isinstance(node.op, _NOT_COMMUTATIVE)
    if binop and isinstance(node, ast.BinOp) and not _is_string_format(node):
        sites.extend(_swap_operands(node.left, node.right, lines))
    if isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        for index, op in enumerate(node.ops):
            old_new = _COMPARE_FLIP.get(type(op))
            if old_new is not None:
                edit = _between(lines, operands[index], operands[index + 1], *old_new)
                if edit is not None:
                    sites.append(("compare", (edit,)))
    elif isinstance(node, ast.BinOp):
        old_new = _ARITH_SWAP.get(type(node.op))
        if old_new is not None and not _is_string_format(node):
            edit = _between(lines, node.left, node.right, *old_new)
            if edit is not None:
                sites.append(("arith", (edit,)))
    elif isinstance(node, ast.BoolOp):
        old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        for left, right in zip(node.values, node.values[1:], strict=False):
            edit = _between(lines, left, right, old, new)
            if edit is not None:
                sites.append(("boolop", (edit,)))
                break
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        text = _segment(lines, _start(node), _end(node))
        if text.isdigit():
            value = int(text)
            shifted = value + 1 if value in (0, 1) or value % 2 == 0 else value - 1
            sites.append(("constant", (Edit(_start(node), _end(node), str(shifted)),)))
    elif isinstance(node, ast.Call):
        sites.extend(_call_sites(node, lines))
    elif isinstance(node, ast.Slice):
        sites.extend(_slice_sites(node, lines))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        operand = _segment(lines, _start(node.operand), _end(node.operand))
        if "\n" not in operand and "#" not in operand:
            sites.append(("drop_not", (Edit(_start(node), _end(node), f"({operand})"),)))
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
        return sites
    for field in ("body", "orelse", "finalbody"):
        block = getattr(node, field, None)
        if isinstance(block, list) and len(block) > 1:
            for statement in block:
                edit = _drop_statement(statement, lines)
                if edit is not None:
                    kind = "drop_if" if isinstance(statement, ast.If) else "drop_call"
                    sites.append((kind, (edit,)))
    return sites


def _swap_operands(
    left: ast.AST, right: ast.AST, lines: list[str]
) -> list[tuple[str, tuple[Edit, ...]]]:
    """The two operands swapped, when each is on one line and they differ."""
    text_left = _segment(lines, _start(left), _end(left))
    text_right = _segment(lines, _start(right), _end(right))
    if text_left == text_right or "\n" in text_left + text_right:
        return []
    if isinstance(left, (ast.BinOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Lambda)):
        return []  # `a - b < c` would become `c < a - b`: fine, but precedence needs care
    if isinstance(right, (ast.BinOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Lambda)):
        return []
    edits = (
        Edit(_start(left), _end(left), text_right),
        Edit(_start(right), _end(right), text_left),
    )
    return [("swap_operands", edits)]


def _slice_sites(node: ast.Slice, lines: list[str]) -> list[tuple[str, tuple[Edit, ...]]]:
    """A bound of ``x[a:b]`` that is not a literal, moved by one."""
    sites: list[tuple[str, tuple[Edit, ...]]] = []
    for bound, shift in ((node.lower, " + 1"), (node.upper, " - 1")):
        if bound is None or isinstance(bound, (ast.Constant, ast.UnaryOp)):
            continue
        text = _segment(lines, _start(bound), _end(bound))
        if "\n" in text:
            continue
        wrapped = text if isinstance(bound, (ast.Name, ast.Attribute, ast.Call)) else f"({text})"
        sites.append(("off_by_one", (Edit(_start(bound), _end(bound), f"{wrapped}{shift}"),)))
    return sites


def _default(node: ast.expr, lines: list[str]) -> Edit | None:
    """A parameter's default changed: a bool flipped, an integer moved by one."""
    if not isinstance(node, ast.Constant):
        return None
    text = _segment(lines, _start(node), _end(node))
    if node.value is True or node.value is False:
        return Edit(_start(node), _end(node), "False" if node.value else "True")
    if type(node.value) is int and text.isdigit():
        value = int(text)
        return Edit(_start(node), _end(node), str(value + 1 if value in (0, 1) else value - 1))
    return None


def _call_sites(node: ast.Call, lines: list[str]) -> list[tuple[str, tuple[Edit, ...]]]:
    sites: list[tuple[str, tuple[Edit, ...]]] = []
    positional = [arg for arg in node.args if not isinstance(arg, ast.Starred)]
    called = node.func.id if isinstance(node.func, ast.Name) else None
    if len(positional) >= 2 and positional[:2] == node.args[:2] and called not in _NO_SWAP:
        first, second = positional[0], positional[1]
        text_first = _segment(lines, _start(first), _end(first))
        text_second = _segment(lines, _start(second), _end(second))
        if text_first != text_second and "\n" not in text_first + text_second:
            sites.append(
                (
                    "swap_args",
                    (
                        Edit(_start(first), _end(first), text_second),
                        Edit(_start(second), _end(second), text_first),
                    ),
                )
            )
    if isinstance(node.func, ast.Name) and node.func.id == "range" and node.args:
        bound = node.args[-1] if len(node.args) <= 2 else node.args[1]
        text = _segment(lines, _start(bound), _end(bound))
        if "\n" not in text and not (isinstance(bound, ast.Constant)):
            sites.append(("constant", (Edit(_start(bound), _end(bound), f"{text} + 1"),)))
    return sites


def _drop_statement(statement: ast.stmt, lines: list[str]) -> Edit | None:
    """The edit removing an ``if`` statement without ``else``, or a call made for its effect,
    that has its lines to itself."""
    dropped_if = isinstance(statement, ast.If) and not statement.orelse
    dropped_call = isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
    if not (dropped_if or dropped_call):
        return None
    end_line, _ = _end(statement)
    first = lines[statement.lineno - 1]
    if (
        first[: statement.col_offset].strip()
        or _segment(
            lines, (end_line, _end(statement)[1]), (end_line, len(lines[end_line - 1].encode()))
        ).strip()
    ):
        return None
    return Edit((statement.lineno, 0), (end_line + 1, 0), "") if end_line < len(lines) else None


def _is_string_format(node: ast.BinOp) -> bool:
    """``"..." % args``: flipping it is a crash, not a bug."""
    return isinstance(node.op, ast.Mod) and isinstance(node.left, (ast.Constant, ast.JoinedStr))

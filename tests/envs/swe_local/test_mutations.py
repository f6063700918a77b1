"""The mutation operators: each makes a small, valid, behaviour-changing edit of one function."""

from __future__ import annotations

import ast

import pytest

from palaestra.envs.swe_local.mutations import KINDS, Mutation, apply, functions, mutations

SOURCE = '''\
"""A module."""


def total(items, limit, strict=False):
    # A comment kept by every edit.
    result = 0
    for index in range(len(items)):
        if index >= limit:
            return result
        result = result + items[index] * 2
    check(items[:limit], strict)
    return result - limit


class Box:
    def ok(self, a, b):
        if not a and b:
            return pow(a, b)
        return a < b
'''


def _all() -> list[Mutation]:
    found: list[Mutation] = []
    for name, node in functions(SOURCE):
        found.extend(mutations(SOURCE, name, node))
    return found


def _changed_lines(mutation: Mutation) -> list[tuple[str, str]]:
    after = apply(SOURCE, mutation).splitlines()
    before = SOURCE.splitlines()
    if len(after) != len(before):
        return [("<dropped>", "")]
    return [
        (old.strip(), new.strip()) for old, new in zip(before, after, strict=True) if old != new
    ]


def test_functions_are_named_with_their_class() -> None:
    assert [name for name, _ in functions(SOURCE)] == ["total", "Box.ok"]


def test_every_kind_is_found_and_each_result_parses_and_differs() -> None:
    found = _all()
    assert {m.kind for m in found} == set(KINDS)
    original = ast.dump(ast.parse(SOURCE))
    for mutation in found:
        changed = apply(SOURCE, mutation)
        assert ast.dump(ast.parse(changed)) != original, mutation
        assert "# A comment kept by every edit." in changed


@pytest.mark.parametrize(
    ("kind", "old", "new"),
    [
        ("compare", "if index >= limit:", "if index > limit:"),
        ("arith", "result = result + items[index] * 2", "result = result - items[index] * 2"),
        ("arith", "result = result + items[index] * 2", "result = result + items[index] / 2"),
        ("constant", "result = 0", "result = 1"),
        ("constant", "for index in range(len(items)):", "for index in range(len(items) + 1):"),
        ("swap_args", "return pow(a, b)", "return pow(b, a)"),
        ("boolop", "if not a and b:", "if not a or b:"),
        ("drop_not", "if not a and b:", "if (a) and b:"),
        ("swap_operands", "if index >= limit:", "if limit >= index:"),
        ("swap_operands", "return result - limit", "return limit - result"),
        ("swap_operands", "return a < b", "return b < a"),
        ("off_by_one", "check(items[:limit], strict)", "check(items[:limit - 1], strict)"),
        ("changed_default", "def total(items, limit, strict=False):",
         "def total(items, limit, strict=True):"),
    ],
)  # fmt: skip
def test_single_line_edits(kind: str, old: str, new: str) -> None:
    edits = [_changed_lines(m) for m in _all() if m.kind == kind]
    assert [(old, new)] in edits


def test_drop_if_removes_a_whole_branch() -> None:
    dropped = [m for m in _all() if m.kind == "drop_if"]
    assert dropped
    for mutation in dropped:
        changed = apply(SOURCE, mutation)
        assert len(changed.splitlines()) == len(SOURCE.splitlines()) - 2
        ast.parse(changed)
    texts = [apply(SOURCE, m) for m in dropped]
    assert any(
        "if index >= limit" not in text and "return result - limit\n" in text for text in texts
    )


def test_drop_call_removes_a_call_made_for_its_effect() -> None:
    (dropped,) = [m for m in _all() if m.kind == "drop_call"]
    assert "check(" not in apply(SOURCE, dropped)


def test_no_swap_of_isinstance_or_string_formatting() -> None:
    source = "def f(x):\n    y = 1\n    return isinstance(x, int), '%s' % (x,)\n"
    ((name, node),) = functions(source)
    kinds = [(m.kind, apply(source, m)) for m in mutations(source, name, node)]
    assert all("isinstance(int, x)" not in text for _, text in kinds)
    assert all("'%s' // (x,)" not in text for _, text in kinds)


def test_mutations_are_stable_and_keys_unique() -> None:
    first, second = _all(), _all()
    assert first == second
    keys = [(m.function, m.key) for m in first]
    assert len(keys) == len(set(keys))

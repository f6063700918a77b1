"""Mutations of Go and Rust sources found with tree-sitter: each kind, on real syntax."""

from __future__ import annotations

import pytest

from palaestra.envs.swe_local.languages.treesitter import (
    GO,
    KINDS,
    RUST,
    Grammar,
    apply,
    functions,
    mutations,
    parse,
)

GO_SOURCE = b"""package clamp

// Clamp keeps v within [lo, hi].
func Clamp(v, lo, hi int) int {
\tif v < lo {
\t\treturn lo
\t}
\tif v > hi && !loose {
\t\treturn hi - 1
\t}
\tnote(v, lo)
\treturn v
}

var loose = false

func note(a, b int) {}

func (r *Range) Width() int { return r.hi - r.lo }

type Range struct{ lo, hi int }
"""

RUST_SOURCE = b"""pub struct Range { lo: i64, hi: i64 }

impl Range {
    pub fn width(&self) -> i64 {
        if self.hi < self.lo || !self.valid() {
            return 0;
        }
        log(self.lo, self.hi);
        self.hi - self.lo + 1usize as i64
    }
    fn valid(&self) -> bool { true }
}

fn log(a: i64, b: i64) {}

#[cfg(test)]
mod tests {
    #[test]
    fn width() { assert_eq!(super::Range { lo: 1, hi: 3 }.width(), 3); }
}
"""


def test_go_functions_and_methods_are_found_with_their_receiver() -> None:
    names = [function.name for function in functions(GO, GO_SOURCE)]
    assert names == ["Clamp", "note", "Range.Width"]


def test_rust_test_code_is_never_a_function_to_mutate() -> None:
    names = [function.name for function in functions(RUST, RUST_SOURCE)]
    assert names == ["Range.width", "Range.valid", "log"]


@pytest.mark.parametrize(
    "grammar,source,name", [(GO, GO_SOURCE, "Clamp"), (RUST, RUST_SOURCE, "Range.width")]
)
def test_every_kind_but_flip_bool_is_found_and_each_result_parses(
    grammar: Grammar, source: bytes, name: str
) -> None:
    function = next(f for f in functions(grammar, source) if f.name == name)
    found = mutations(grammar, source, function)
    kinds = {mutation.kind for mutation in found}
    assert kinds == set(KINDS) - {"flip_bool"}
    for mutation in found:
        changed = apply(source, mutation)
        assert changed != source
        assert not parse(grammar, changed).root_node.has_error


def test_a_mutation_is_a_minimal_edit_of_the_site() -> None:
    function = next(f for f in functions(GO, GO_SOURCE) if f.name == "Clamp")
    results: dict[str, list[bytes]] = {}
    for mutation in mutations(GO, GO_SOURCE, function):
        results.setdefault(mutation.kind, []).append(apply(GO_SOURCE, mutation))
    assert any(b"\tif v <= lo {" in text for text in results["compare"])
    assert any(b"\tif lo < v {" in text for text in results["swap_operands"])
    assert results["boolop"] == [GO_SOURCE.replace(b"&&", b"||")]
    assert results["drop_not"] == [GO_SOURCE.replace(b"!loose", b"loose")]
    assert results["swap_args"] == [GO_SOURCE.replace(b"note(v, lo)", b"note(lo, v)")]
    assert results["drop_call"] == [GO_SOURCE.replace(b"\tnote(v, lo)", b"\t")]
    for dropped in results["drop_if"]:
        assert dropped.count(b"if ") == GO_SOURCE.count(b"if ") - 1


def test_a_rust_integer_keeps_its_type_suffix_off_by_one() -> None:
    function = next(f for f in functions(RUST, RUST_SOURCE) if f.name == "Range.width")
    constants = [m for m in mutations(RUST, RUST_SOURCE, function) if m.kind == "constant"]
    texts = {
        apply(RUST_SOURCE, m).split(b"fn log")[0].split(b"self.hi - self.lo + ")[1][:9]
        for m in constants
    }
    assert any(text.startswith((b"2usize", b"0usize")) for text in texts)


def test_flipped_booleans_are_found_where_a_literal_is() -> None:
    function = next(f for f in functions(RUST, RUST_SOURCE) if f.name == "Range.valid")
    (mutation,) = mutations(RUST, RUST_SOURCE, function)
    assert mutation.kind == "flip_bool"
    assert b"fn valid(&self) -> bool { false }" in apply(RUST_SOURCE, mutation)

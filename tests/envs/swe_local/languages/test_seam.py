"""Go and Rust through the set's seam (``languages.language``), as the manifest's machinery
reaches them."""

from __future__ import annotations

import json

from palaestra.envs.swe_local.languages import language

MODULE = "github.com/kballard/go-shellquote"


def test_a_line_naming_go_or_rust_finds_its_language_and_repositories() -> None:
    go, rust = language("go"), language("rust")
    assert go.name == "go" and rust.name == "rust"
    assert go.repos()["go-cmp"].source == "golang-github-google-go-cmp-dev"
    assert rust.repos()["semver"].source == "librust-semver-dev"
    assert "apt-get install -y --no-install-recommends golang-go " in go.dockerfile_prefix("uuid")
    assert "cargo generate-lockfile --offline" in rust.dockerfile_prefix("itoa")


def test_the_test_command_runs_the_ids_packages_and_names_only() -> None:
    ids = [f"{MODULE}/TestSimpleJoin", f"{MODULE}/TestJoinSplit"]
    command = language("go").test_command(ids)
    assert command[-2:] == ["^(TestJoinSplit|TestSimpleJoin)$", MODULE]


def test_outcomes_are_read_for_the_ids_asked_about() -> None:
    events = [
        {"Action": "pass", "Package": MODULE, "Test": "TestA"},
        {"Action": "fail", "Package": MODULE, "Test": "TestB"},
        {"Action": "pass", "Package": MODULE, "Test": "TestB/sub"},
        {"Action": "pass", "Package": MODULE, "Test": "TestC"},
    ]
    report = "\n".join(json.dumps(event) for event in events).encode()
    ids = [f"{MODULE}/TestA", f"{MODULE}/TestB", f"{MODULE}/TestD"]
    assert language("go").outcomes(report, ids) == {
        f"{MODULE}/TestA": "passed",
        f"{MODULE}/TestB": "failed",
    }


def test_mutations_of_a_source_file_name_their_function_and_change_it() -> None:
    source = (
        "package p\n\nfunc Max(a, b int) int {\n\tif a > b {\n\t\treturn a\n\t}\n\treturn b\n}\n"
    )
    found = language("go").mutations("p.go", source)
    assert {mutation.function for mutation in found} == {"Max"}
    assert {"compare", "swap_operands", "drop_if"} <= {mutation.kind for mutation in found}
    assert all(mutation.text != source for mutation in found)

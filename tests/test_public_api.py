"""The public surface: every exported name resolves and says what it is."""

from __future__ import annotations

import importlib
import inspect

import pytest

PUBLIC_PACKAGES = [
    "palaestra",
    "palaestra.agents",
    "palaestra.collection",
    "palaestra.models",
    "palaestra.remote",
    "palaestra.sandbox",
    "palaestra.training",
]


def exported(package: str) -> list[tuple[str, object]]:
    module = importlib.import_module(package)
    return [(name, getattr(module, name)) for name in module.__all__]


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_every_exported_class_and_function_has_its_own_docstring(package: str) -> None:
    missing = [
        name
        for name, value in exported(package)
        if (inspect.isclass(value) or inspect.isfunction(value))
        and not (value.__doc__ or "").strip()
    ]
    assert missing == [], f"{package} exports names without a docstring: {missing}"


def test_the_names_a_user_needs_are_exported_from_the_top() -> None:
    import palaestra

    for name in ("collect", "collect_async", "RunSpec", "ModelConfig", "StepEnvironment"):
        assert name in palaestra.__all__
    for name in ("TaskRow", "RolloutRow", "FailureRow", "AggregateFile"):
        assert name in palaestra.__all__


def test_a_missing_name_is_an_attribute_error_naming_it() -> None:
    import palaestra

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = palaestra.nope  # type: ignore[attr-defined]

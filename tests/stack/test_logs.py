"""A running stack's log directory is its own: passed over by the next stack, or refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from palaestra.errors import ConfigError
from palaestra.stack.logs import LogDirectory


def test_a_held_default_directory_is_passed_over_and_free_again_once_released(
    tmp_path: Path,
) -> None:
    base = tmp_path / "logs" / "stack"
    first = LogDirectory.claim(base, chosen=False)
    second = LogDirectory.claim(base, chosen=False)
    assert (first.path, second.path) == (base, base.with_name("stack-2"))
    first.release()
    again = LogDirectory.claim(base, chosen=False)
    assert again.path == base
    again.release()
    second.release()


def test_a_chosen_directory_another_stack_holds_is_refused_in_one_line(tmp_path: Path) -> None:
    held = LogDirectory.claim(tmp_path / "mine", chosen=True)
    try:
        with pytest.raises(ConfigError) as refused:
            LogDirectory.claim(tmp_path / "mine", chosen=True)
        assert str(refused.value) == (
            f"--log-dir {tmp_path / 'mine'}: another running stack writes its logs there "
            f"(pid {os.getpid()}); give another directory"
        )
    finally:
        held.release()

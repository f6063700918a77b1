from __future__ import annotations

import asyncio

import pytest

from palaestra.environment.running.boundary import Boundary, Overran
from palaestra.errors import (
    EnvironmentFailure,
    EnvironmentTimeout,
    SessionLost,
    ToolCallRejected,
    ToolError,
)
from palaestra.types import FailureKind


def _env_code() -> None:
    raise ValueError("bad value")  # the line the failure names


BOUNDARY = Boundary(EnvironmentFailure, EnvironmentTimeout, "seed", _env_code)


def test_typed_failures_rejections_and_cancellations_pass_through_as_they_are() -> None:
    for error in (SessionLost("gone"), ToolCallRejected("wrong"), asyncio.CancelledError()):
        with pytest.raises(type(error)) as caught, BOUNDARY:
            raise error
        assert caught.value is error


def test_any_other_exception_becomes_the_boundary_failure_raised_from_it() -> None:
    with pytest.raises(EnvironmentFailure) as caught, BOUNDARY:
        _env_code()
    line = _env_code.__code__.co_firstlineno + 1
    assert (
        caught.value.reason
        == f"seed raised ValueError: bad value (at {__file__}:{line} in _env_code)"
    )
    assert isinstance(caught.value.__cause__, ValueError)


def test_an_overrun_becomes_the_boundary_timeout_failure() -> None:
    with pytest.raises(EnvironmentTimeout) as caught, BOUNDARY:
        raise Overran(1.5, [(__file__, 7, "wait")], "; left running")
    assert caught.value.kind is FailureKind.TIMEOUT
    assert (
        caught.value.reason == f"seed timed out after 1.5s (at {__file__}:7 in wait); left running"
    )


def test_a_tool_error_is_the_model_s_mistake_only_at_a_boundary_that_rejects() -> None:
    rejecting = Boundary(EnvironmentFailure, EnvironmentTimeout, "tool 't'", rejects=True)
    with pytest.raises(ToolCallRejected, match="try again"), rejecting:
        raise ToolError("try again")
    with pytest.raises(EnvironmentFailure, match="ToolError: try again"), BOUNDARY:
        raise ToolError("try again")


def test_a_remote_call_s_timeout_is_an_overrun_but_environment_code_s_own_is_a_failure() -> None:
    remote = Boundary(
        EnvironmentFailure, EnvironmentTimeout, "POST /seed_session", overruns=(TimeoutError,)
    )
    with pytest.raises(EnvironmentTimeout, match=r"/seed_session timed out \(TimeoutError"), remote:
        raise TimeoutError("no answer in 300s")
    with pytest.raises(EnvironmentFailure) as caught, BOUNDARY:  # the env's own HTTP client
        raise TimeoutError("upstream")
    assert caught.value.kind is FailureKind.ENV_ERROR

"""Where an environment's own code meets the rollout: one mapping from what it raised to a failure.

Every call into environment code (seed, a tool, verify, close, reset, step) runs inside a
``Boundary``. A typed failure (``RolloutFailure``, ``ToolCallRejected``) passes through as it
is; a call that overran its limit (``Overran``) becomes the boundary's timeout failure; any
other exception becomes the boundary's failure, raised ``from`` it (a server logs the
traceback), with its type, message and the place in the environment's code it came from::

    tool 'lookup' raised KeyError: 'x' (at /src/my_env/env.py:41 in lookup)

The remote clients (``palaestra.remote``) hold their HTTP calls in a ``Boundary`` too, whose
overruns are the transport's timeouts: one mapping, whether the code is in-process or served.

"The environment's code" is the directory of the function the boundary called; when no frame
is there (a helper elsewhere), the innermost frame outside palaestra's framework, the standard
library and installed packages.
"""

from __future__ import annotations

import functools
import os
import sys
import traceback
from collections.abc import Callable, Iterable
from types import FrameType, TracebackType
from typing import Any, Literal

from palaestra.errors import PalaestraError, RolloutFailure, ToolCallRejected, ToolError

Frame = tuple[str, int, str]
"""(file, line, function) of one frame."""


class Overran(PalaestraError):
    """A call into environment code ran past its limit (raised by palaestra's clock).

    ``frames`` is where the code was when the limit passed, innermost last; ``note`` adds what
    became of it (a thread left running).
    """

    def __init__(self, seconds: float, frames: list[Frame], note: str = "") -> None:
        self.seconds, self.frames, self.note = seconds, frames, note
        super().__init__(f"ran past {seconds:g}s")


class Boundary:
    """A context manager mapping what environment code raised into the boundary's failures.

    ``what`` names the call in messages (``"verify"``, ``"tool 'lookup'"``); ``code`` is the
    function called, whose directory is the environment's code; ``rejects``: a ``ToolError``
    is the model's mistake (``ToolCallRejected``), not a failure; ``overruns``: the exceptions
    that mean the call ran past its limit (palaestra's clock; a remote call's ``TimeoutError``
    too, whereas environment code's own ``TimeoutError`` is a failure like any other).
    Stateless: build one per call site and reuse it (entering it costs no allocation).
    """

    __slots__ = ("code", "failure", "overruns", "rejects", "timeout", "what")

    def __init__(
        self,
        failure: type[RolloutFailure],
        timeout: type[RolloutFailure],
        what: str,
        code: Callable[..., Any] | None = None,
        *,
        rejects: bool = False,
        overruns: tuple[type[Exception], ...] = (Overran,),
    ) -> None:
        self.failure, self.timeout, self.what = failure, timeout, what
        self.code, self.rejects, self.overruns = code, rejects, overruns

    def __enter__(self) -> Boundary:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> Literal[False]:
        if isinstance(error, Exception):
            self.raise_for(error)
        return False  # no error, a typed failure, or a cancellation: as it is

    def raise_for(self, error: Exception) -> None:
        """Raise the failure ``error`` maps to; return if it passes as it is (typed failures).

        The same mapping as ``with boundary:``, for a hot path that spells it
        ``except Exception as error: boundary.raise_for(error); raise`` (no enter/exit calls).
        """
        if isinstance(error, RolloutFailure | ToolCallRejected):
            return
        if isinstance(error, self.overruns):
            if isinstance(error, Overran):
                where = self.where(error.frames)
                raise self.timeout(
                    f"{self.what} timed out after {error.seconds:g}s{where}{error.note}"
                ) from None
            raise self.timeout(f"{self.what} timed out ({describe(error)})") from None
        if self.rejects and isinstance(error, ToolError):
            raise ToolCallRejected(str(error)) from error
        raise self.failure(raised(self.what, error, self.code)) from error

    def where(self, frames: list[Frame]) -> str:
        """`` (at file:line in function)`` of the innermost frame of the environment's code."""
        return _at(innermost_own_frame(frames, _code_directory(self.code)))


def raised(what: str, error: BaseException, code: Callable[..., Any] | None = None) -> str:
    """``{what} raised Type: message (at file:line in function)``: what ``error`` was and the
    innermost line of its traceback in the author's own code (``code``'s directory, else the
    innermost frame that is not palaestra's or a library's). Any code palaestra calls for its
    author (an environment's, a caller's callback) is named this way."""
    frame = innermost_own_frame(traceback_frames(error.__traceback__), _code_directory(code))
    return f"{what} raised {describe(error)}{_at(frame)}"


def _at(frame: Frame | None) -> str:
    return f" (at {frame[0]}:{frame[1]} in {frame[2]})" if frame else ""


def describe(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def traceback_frames(trace: TracebackType | None) -> list[Frame]:
    return [(f.filename, f.lineno or 0, f.name) for f in traceback.extract_tb(trace)]


def stack_frames(frame: FrameType | None) -> list[Frame]:
    """A running frame and its callers as frames, innermost last."""
    return [(f.filename, f.lineno or 0, f.name) for f in traceback.extract_stack(frame)]


def innermost_own_frame(frames: Iterable[Frame], directory: str | None) -> Frame | None:
    """The innermost frame in ``directory``; else the innermost that is nobody else's."""
    frames = list(frames)
    if directory is not None:
        installed = _library(os.path.join(directory, "_"))  # an environment pip-installed
        for frame in reversed(frames):
            path = frame[0]
            if (
                _inside(path, directory)
                and not _framework(path)
                and (installed or not _library(path))  # not a virtualenv inside a project
            ):
                return frame
    for frame in reversed(frames):
        if not _framework(frame[0]) and not _library(frame[0]):
            return frame
    return None


def _code_directory(code: Callable[..., Any] | None) -> str | None:
    function = getattr(code, "__func__", code)
    source = getattr(getattr(function, "__code__", None), "co_filename", None)
    return os.path.dirname(os.path.abspath(source)) if source else None


def _inside(path: str, directory: str) -> bool:
    return os.path.abspath(path).startswith(directory + os.sep)


def _framework(path: str) -> bool:
    """palaestra's own code, except the environments it ships (they are environment code)."""
    package, envs = _palaestra_directories()
    return _inside(path, package) and not _inside(path, envs)


def _library(path: str) -> bool:
    return path.startswith("<") or any(_inside(path, d) for d in _library_directories())


@functools.cache
def _palaestra_directories() -> tuple[str, str]:
    package = os.path.dirname(os.path.abspath(__file__))
    return package, os.path.join(package, "envs")


@functools.cache
def _library_directories() -> tuple[str, ...]:
    import sysconfig  # only once a failure is described: it is slow to import

    paths = sysconfig.get_paths()
    found = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    found.update(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    return tuple(os.path.abspath(p) for p in found)

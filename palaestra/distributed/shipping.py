"""The run as it crosses to a worker process: pickled, with what the script defines by file.

pickle sends a class (or function) by its module and name, and the worker process imports it
again. A worker is a fresh interpreter whose ``__main__`` is not the user's: what a script run
as ``python my_run.py`` defines (an ``Environment`` subclass given as ``env=MyEnv``) is sent
as the script's file and the name in it, and the worker imports that file under a module name
of its own, so the script's ``if __name__ == "__main__":`` part does not run there (the same
rule as Python's ``multiprocessing``). A script run as ``python -m package.module`` is
imported by its module name.

What no worker can import is refused here, in the collector, before any worker starts, with
one line saying what to do: a class defined in a notebook, the REPL or ``python -c`` (its
``__main__`` has no file), or inside a function.
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import pickle
import sys
import types
from pathlib import Path
from typing import Any

from palaestra.errors import ConfigError

SCRIPT_MODULE = "palaestra_script_"
"""The prefix of the module name a worker imports a script's file under."""

_FIX = "move it into a module and pass env='./my_env.py:{name}' (or import it from there)"


def dumps(value: object) -> bytes:
    """``value`` pickled for a worker process; a one-line ``ConfigError`` for what it holds
    that a worker could not import (or that cannot be pickled at all)."""
    buffer = io.BytesIO()
    try:
        _Pickler(buffer).dump(value)
    except ConfigError:
        raise
    except Exception as error:
        raise ConfigError(
            f"the run cannot be sent to worker processes ({type(error).__name__}: {error}): "
            f"give the environment by name, file or module:Class, not an object"
        ) from None
    return buffer.getvalue()


def loads(payload: bytes) -> Any:
    """What ``dumps`` pickled, in a worker process (importing the script it came from)."""
    return pickle.loads(payload)


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        if not isinstance(obj, (type, types.FunctionType)):
            return NotImplemented
        if "<locals>" in obj.__qualname__:
            raise ConfigError(
                f"{obj.__qualname__} is defined inside a function, so worker processes cannot "
                f"import it: define it at the top level of a module and pass "
                f"env='./my_env.py:{obj.__name__}' (or import it from there)"
            )
        main = sys.modules["__main__"]
        if obj.__module__ != "__main__" or _named(main, obj.__qualname__) is not obj:
            return NotImplemented  # pickle's own rules (and its error for a lambda)
        spec = getattr(main, "__spec__", None)
        if spec is not None and spec.name and spec.name != "__main__":  # python -m module
            return _in_module, (spec.name, obj.__qualname__)
        file = getattr(main, "__file__", None)
        if not file or not Path(file).is_file():
            raise ConfigError(
                f"{obj.__qualname__} is defined in a notebook or the REPL (its __main__ has no "
                f"file), so worker processes cannot import it: "
                f"{_FIX.format(name=obj.__qualname__)}"
            )
        return _in_script, (str(Path(file).resolve()), obj.__qualname__)


def _in_module(module: str, qualname: str) -> Any:
    """The object ``qualname`` of the module a script was run as (``python -m module``)."""
    try:
        found: Any = importlib.import_module(module)
    except Exception as error:
        raise ConfigError(_import_failed(module, error)) from None
    return _attribute(found, qualname, module)


def _in_script(path: str, qualname: str) -> Any:
    """The object ``qualname`` of the script at ``path``, imported once per process under a
    name of its own (not ``__main__``)."""
    name = f"{SCRIPT_MODULE}{abs(hash(path))}"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ConfigError(f"{path}: a worker process cannot import it")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException as error:
            del sys.modules[name]
            if not isinstance(error, Exception):
                raise
            raise ConfigError(_import_failed(path, error)) from None
    return _attribute(module, qualname, path)


def _named(module: object, qualname: str) -> Any:
    found: Any = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found


def _attribute(module: Any, qualname: str, where: str) -> Any:
    found = _named(module, qualname)
    if found is None:
        raise ConfigError(
            f"{where} defines no {qualname} when a worker process imports it: define it "
            f'at the top level, outside `if __name__ == "__main__":`'
        )
    return found


def _import_failed(where: str, error: Exception) -> str:
    return (
        f"{where}: importing it in a worker process raised {type(error).__name__}: {error} "
        f'(start the run under `if __name__ == "__main__":`)'
    )

"""Run several Python programs, one after the other, in this one interpreter.

``python run_snippets.py PLAN``: ``PLAN`` is a JSON list of ``{"name", "code", "directory"}``.
Each program runs as ``__main__`` with globals of its own, in its own directory, its output
(file descriptors 1 and 2, so what C libraries and loggers write too) in that directory's
``stdout`` and ``stderr``, and the process environment put back as it was after it; its exit
status (0, a ``SystemExit``'s code, or 1 with the traceback in ``stderr`` for any other
exception) in the directory's ``status``.

What they share is what makes running them here cheaper than one interpreter each: the modules
imported once (torch, transformers, TRL, llama.cpp are seconds of CPU per interpreter).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path


def run(name: str, code: str, directory: Path) -> int:
    """Run ``code`` as a program in ``directory``; its exit status."""
    environment = dict(os.environ)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with (directory / "stdout").open("wb") as out, (directory / "stderr").open("wb") as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        os.chdir(directory)
        try:
            exec(compile(code, name, "exec"), {"__name__": "__main__", "__file__": name})
            status = 0
        except SystemExit as stop:  # as the interpreter would end on it
            if stop.code is None or isinstance(stop.code, int):
                status = stop.code or 0
            else:
                print(stop.code, file=sys.stderr)
                status = 1
        except BaseException:
            traceback.print_exc()
            status = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.environ.clear()
            os.environ.update(environment)
    for descriptor in saved:
        os.close(descriptor)
    return status


def main() -> None:
    for program in json.loads(Path(sys.argv[1]).read_text()):
        directory = Path(program["directory"])
        status = run(program["name"], program["code"], directory)
        (directory / "status").write_text(str(status))


if __name__ == "__main__":
    main()

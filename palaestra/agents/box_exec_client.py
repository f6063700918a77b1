"""The client end of ``{box_exec}``: run one command in a rollout's box, as ``ssh`` would.

Run as a script (never imported by palaestra, and it imports nothing of palaestra, so it
starts in the harness' own time under any interpreter)::

    python3 -I box_exec_client.py SOCKET echo hi

It joins its arguments with spaces (as ``ssh host cmd...`` does), sends them as one command
to the agent serving ``SOCKET`` (``palaestra.agents.box_exec``), writes what the command
printed (stdout and stderr, in order) to its stdout and exits with the command's status.
When the box cannot run it, it says why on stderr and exits 255 (``ssh``'s own failure).

``python3 -I box_exec_client.py --docker SOCKET ARGS...`` answers as the ``docker`` command
line does for a harness that drives a container through it (mini-swe-agent's ``docker``
environment takes the executable as ``executable``): ``run`` starts nothing and prints the
box's name, ``exec [-w DIR] [-e K=V]... NAME ARGV...`` runs ``ARGV`` in the box (in ``DIR``
unless it is ``.``, with the variables set), ``stop``, ``rm`` and ``kill`` do nothing (the
box is the rollout's: palaestra closes it).
"""

from __future__ import annotations

import json
import shlex
import socket
import sys

FAILED = 255
"""The exit status when the command could not be run at all."""
BOX_NAME = "palaestra-box"
"""What ``--docker run`` prints as the container's id."""


def main(argv: list[str]) -> int:
    if argv[:1] == ["--docker"]:
        return docker(argv[1:])
    if len(argv) < 2:
        print("usage: box-exec COMMAND [ARG...]", file=sys.stderr)
        return 2
    return run(argv[0], " ".join(argv[1:]))


def run(path: str, command: str) -> int:
    """Run ``command`` in the box served at ``path``; its output to stdout, its status back."""
    request = json.dumps({"command": command}).encode() + b"\n"
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(path)
            conn.sendall(request)
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = conn.recv(65536)
                if not chunk:
                    break
                reply += chunk
    except OSError as error:
        print(f"box-exec: the rollout's box cannot be reached: {error}", file=sys.stderr)
        return FAILED
    try:
        answer = json.loads(reply)
        output, status = str(answer["output"]), int(answer["status"])
    except (ValueError, KeyError, TypeError):
        print("box-exec: the rollout's box gave no answer", file=sys.stderr)
        return FAILED
    if answer.get("error"):
        print(f"box-exec: {answer['error']}", file=sys.stderr)
    sys.stdout.write(output)
    sys.stdout.flush()
    return status


def docker(argv: list[str]) -> int:
    """``docker run|exec|stop|rm|kill`` over the box served at ``argv[0]``."""
    if len(argv) < 2:
        print("usage: box-exec --docker SOCKET run|exec|stop|rm|kill ...", file=sys.stderr)
        return 2
    path, verb, args = argv[0], argv[1], argv[2:]
    if verb == "run":
        print(BOX_NAME)
        return 0
    if verb in ("stop", "rm", "kill"):
        return 0
    if verb != "exec":
        print(f"box-exec: docker {verb} is not supported on a rollout's box", file=sys.stderr)
        return 1
    workdir, variables = ".", []
    while args and args[0].startswith("-"):
        flag = args.pop(0)
        if flag in ("-w", "--workdir", "-e", "--env", "-u", "--user") and args:
            value = args.pop(0)
            if flag in ("-w", "--workdir"):
                workdir = value
            elif flag in ("-e", "--env"):
                variables.append(value)
        elif flag.startswith("--workdir="):
            workdir = flag.split("=", 1)[1]
        elif flag.startswith("--env="):
            variables.append(flag.split("=", 1)[1])
        # any other flag (-i, -t, -d) takes no value and changes nothing here
    if len(args) < 2:
        print("usage: docker exec [-w DIR] [-e K=V]... CONTAINER COMMAND...", file=sys.stderr)
        return 2
    command = shlex.join(args[1:])
    if variables:
        command = f"env {shlex.join(variables)} {command}"
    if workdir != ".":
        command = f"cd {shlex.quote(workdir)} && {command}"
    return run(path, command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

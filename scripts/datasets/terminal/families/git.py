"""Git: make commits, revert a bad commit, find the commit that introduced a line, branch.

The repository ``/app/repo`` is built at image build time from a plan (fixed authors and
dates, so its hashes are the same on every build); the checks read its history with git."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from scripts.datasets.terminal.spec import TerminalTask, constants

FAMILY = "git"
PACKAGES = ("python3", "git", "less", "patch")
REPO = "/app/repo"
MODULES = ["parser", "cache", "router", "loader", "metrics", "scheduler", "auth", "storage"]
VERBS = ["Fix", "Add", "Refactor", "Tidy", "Speed", "up", "Document", "Harden", "Simplify"]

BUILD = """\
import json, os, subprocess, sys
plan = json.load(open(sys.argv[1]))
repo = plan["repo"]
os.makedirs(repo, exist_ok=True)
def git(*args, when=None):
    env = dict(os.environ, GIT_AUTHOR_NAME="Dev", GIT_AUTHOR_EMAIL="dev@example.com",
               GIT_COMMITTER_NAME="Dev", GIT_COMMITTER_EMAIL="dev@example.com")
    if when is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{when} +0000"
    subprocess.run(["git", "-C", repo, *args], check=True, env=env, stdout=subprocess.DEVNULL)
def write(files):
    for name, text in files.items():
        path = os.path.join(repo, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
git("init", "-q", "-b", "main")
for idx, commit in enumerate(plan["commits"]):
    write(commit["files"])
    git("add", "-A")
    git("commit", "-q", "-m", commit["subject"], when=1700000000 + 3600 * idx)
write(plan.get("worktree", {}))
"""

SETUP = (
    "git config --system user.name Agent && git config --system user.email agent@example.com"
    " && git config --system init.defaultBranch main",
    "runuser -u agent -- python3 /opt/gen/build.py /opt/gen/plan.json && rm -rf /opt/gen",
)

CHECK_PRELUDE = """
# git reads the repository's own config, which can name programs (core.fsmonitor, filters):
# it runs as nobody (who can write nothing here), with no system or global config, the
# program-running settings turned off, and replace refs ignored.
GIT_ENV = {"GIT_DIR": REPO + "/.git", "GIT_WORK_TREE": REPO, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_NO_REPLACE_OBJECTS": "1",
           "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}
GIT_OPTIONS = ["-c", "safe.directory=*", "-c", "core.fsmonitor=false",
               "-c", "core.hooksPath=/dev/null", "-c", "core.untrackedCache=false",
               "-c", "core.excludesFile=/dev/null", "-c", "status.showUntrackedFiles=normal"]
def git(*args):
    done = run(["git", *GIT_OPTIONS, *args], user=NOBODY, env=GIT_ENV, cwd=REPO)
    return None if done is None or done.returncode != 0 else done.stdout.strip()
def subjects():
    return (git("log", "--format=%s") or "").split("\\n")
"""


def _code(rng: random.Random, module: str, lines: int) -> str:
    body = [f"# {module}.py"]
    for idx in range(lines):
        body.append(
            f"{rng.choice(('LIMIT', 'RETRIES', 'DEPTH', 'WIDTH'))}_{idx} = {rng.randint(1, 999)}"
        )
    return "\n".join(body) + "\n"


def _history(rng: random.Random, count: int) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """``count`` commits over a few modules (unique subjects), and the final files."""
    modules = rng.sample(MODULES, 3)
    files = {f"src/{m}.py": _code(rng, m, rng.randint(3, 8)) for m in modules}
    commits: list[dict[str, Any]] = [{"subject": "Initial import", "files": dict(files)}]
    for idx in range(1, count):
        module = rng.choice(modules)
        name = f"src/{module}.py"
        files[name] += f"OPTION_{idx} = {rng.randint(1, 999)}\n"
        commits.append(
            {
                "subject": f"{rng.choice(VERBS)} {module} (#{100 + idx})",
                "files": {name: files[name]},
            }
        )
    return commits, files


def _task(
    name: str, plan: dict[str, Any], instruction: str, check: str, solve: str, difficulty: int
) -> TerminalTask:
    return TerminalTask(
        family=FAMILY,
        name=name,
        instruction=instruction,
        files={"/opt/gen/build.py": BUILD, "/opt/gen/plan.json": json.dumps(plan, indent=1) + "\n"},
        setup=SETUP,
        check=constants(REPO=REPO) + CHECK_PRELUDE + check,
        solve=solve,
        packages=PACKAGES,
        difficulty=difficulty,
    )


def generate(rng: random.Random, difficulty: int) -> TerminalTask:
    """One git task. (a kind drawn at random)."""
    return rng.choice(KINDS)(rng, difficulty)


def _commits(rng: random.Random, difficulty: int) -> TerminalTask:
    commits, files = _history(rng, 2 + difficulty)
    changed = rng.choice(sorted(files))
    added = f"docs/{rng.choice(MODULES)}-{rng.randint(1, 99)}.md"
    first = f"Tune {changed.split('/')[-1].removesuffix('.py')} limits"
    second = f"Document {added.split('/')[-1].removesuffix('.md')}"
    plan = {
        "repo": REPO,
        "commits": commits,
        "worktree": {
            changed: files[changed] + "TUNED = True\n",
            added: "# Notes\n\nTo be written.\n",
        },
    }
    last = commits[-1]["subject"]
    instruction = f"""\
The git repository `{REPO}` has uncommitted work: a change to `{changed}` and a new file
`{added}`. Make two commits on the current branch, without changing its existing history:

1. one holding only the change to `{changed}`, with the message `{first}`;
2. then one adding `{added}`, with the message `{second}`.

Leave the working tree clean.
"""
    check = (
        constants(CHANGED=changed, ADDED=added, FIRST=first, SECOND=second, LAST=last)
        + """
def changed(commit):
    return git("diff-tree", "--no-commit-id", "--name-only", "-r", commit)
finish_parts({
    "messages": float(subjects()[:3] == [SECOND, FIRST, LAST]),
    "first_commit_files": float(changed("HEAD~1") == CHANGED),
    "second_commit_files": float(changed("HEAD") == ADDED),
    "clean": float(git("status", "--porcelain") == ""),
    "_strict": True,
})
"""
    )
    solve = f"""\
cd {REPO}
git add {changed} && git commit -q -m '{first}'
git add {added} && git commit -q -m '{second}'
"""
    return _task("commits", plan, instruction, check, solve, difficulty)


def _revert(rng: random.Random, difficulty: int) -> TerminalTask:
    commits, files = _history(rng, 3 + 2 * difficulty)
    config = "timeout = 30\nretries = 3\nlog_level = info\n"
    bad = "timeout = 0\nretries = 3\nlog_level = info\n"
    at = rng.randint(1, len(commits) - 1)
    commits[0]["files"] = {**commits[0]["files"], "config.ini": config}
    bad_subject = f"Adjust runtime settings (#{rng.randint(900, 999)})"
    commits.insert(at, {"subject": bad_subject, "files": {"config.ini": bad}})
    plan = {"repo": REPO, "commits": commits}
    instruction = f"""\
In the git repository `{REPO}`, one commit set `timeout` in `config.ini` to 0, which broke
production. Undo that commit's change with a new commit on the current branch: keep every
existing commit (do not rewrite history) and every later change. Leave the working tree clean.
"""
    check = (
        constants(CONFIG=config, BAD=bad_subject, COUNT=len(commits), FILES=files)
        + """
tree_ok = read(REPO + "/config.ini") == CONFIG
tree_ok = tree_ok and all(read(REPO + "/" + n) == t for n, t in FILES.items())
finish_parts({
    "config_restored": float(git("show", "HEAD:config.ini") == CONFIG.strip() and tree_ok),
    "history_kept": float(BAD in subjects() and len(subjects()) == COUNT + 1),
    "clean": float(git("status", "--porcelain") == ""),
    "_strict": True,
})
"""
    )
    solve = f"""\
cd {REPO}
bad=$(git log --format=%H -S'timeout = 0' -- config.ini | tail -n 1)
git revert --no-edit "$bad"
"""
    return _task("revert", plan, instruction, check, solve, difficulty)


def _blame(rng: random.Random, difficulty: int) -> TerminalTask:
    commits, _ = _history(rng, 4 + 3 * difficulty)
    at = rng.randint(1, len(commits) - 1)
    files = commits[at]["files"]
    assert isinstance(files, dict)
    name, text = next(iter(files.items()))
    line = text.rstrip("\n").split("\n")[-1]
    answer = "/app/answer.txt"
    instruction = f"""\
In the git repository `{REPO}`, find the commit that introduced the line `{line}` in
`{name}`. Write its full commit hash (40 hex digits), and nothing else, to `{answer}`.
"""
    check = (
        constants(SUBJECT=commits[at]["subject"], ANSWER=answer)
        + """
rows = (git("log", "--format=%H%x09%s") or "").split("\\n")
pairs = [row.split("\\t", 1) for row in rows if "\\t" in row]
wanted = [h for h, s in pairs if s == SUBJECT]
got = (read(ANSWER) or "").strip()
finish(len(wanted) == 1 and got == wanted[0])
"""
    )
    solve = f"git -C {REPO} log --format=%H -S'{line}' -- {name} | tail -n 1 > {answer}"
    return _task("blame", {"repo": REPO, "commits": commits}, instruction, check, solve, difficulty)


def _branch(rng: random.Random, difficulty: int) -> TerminalTask:
    commits, _ = _history(rng, 3 + 2 * difficulty)
    at = rng.randint(1, len(commits) - 2)
    subject = commits[at]["subject"]
    branch = f"hotfix/{rng.choice(MODULES)}-{rng.randint(10, 99)}"
    instruction = f"""\
In the git repository `{REPO}`, create a branch `{branch}` that points at the commit whose
message is `{subject}`. Stay on the current branch (`main`) and do not move it.
"""
    check = (
        constants(SUBJECT=subject, BRANCH=branch, COUNT=len(commits))
        + """
rows = (git("log", "--format=%H%x09%s") or "").split("\\n")
pairs = [row.split("\\t", 1) for row in rows if "\\t" in row]
wanted = [h for h, s in pairs if s == SUBJECT]
finish_parts({
    "branch": float(len(wanted) == 1 and git("rev-parse", "refs/heads/" + BRANCH) == wanted[0]),
    "main_untouched": float(git("symbolic-ref", "--short", "HEAD") == "main"
                            and len(subjects()) == COUNT),
    "_strict": True,
})
"""
    )
    pattern = subject.replace("(", ".").replace(")", ".")
    solve = f"""\
cd {REPO}
git branch '{branch}' "$(git log --format=%H --grep='^{pattern}$' main | head -n 1)"
"""
    return _task(
        "branch", {"repo": REPO, "commits": commits}, instruction, check, solve, difficulty
    )


KINDS: tuple[Callable[[random.Random, int], TerminalTask], ...] = (
    _commits,
    _revert,
    _blame,
    _branch,
)
"""The task kinds, in the order ``generate`` cycles through them."""

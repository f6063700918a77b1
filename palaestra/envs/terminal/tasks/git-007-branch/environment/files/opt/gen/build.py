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

#!/bin/bash
# The reward: the package's own tests. Every FAIL_TO_PASS must now pass and every PASS_TO_PASS
# still pass, each read from pytest's JUnit report, never from an exit status.
#
# This runs as root once the agent's processes are gone. Nothing the agent left runs as root:
# our own steps (/tests/verify.py) run with python3 -I -S (no site, sitecustomize, .pth, user
# site or PYTHON* variables) and read the repository's objects through git as the test uid
# with no configuration; the tests (the agent's code) run as the test uid, which cannot write
# the reward. A verifier that crashes writes no reward: an error, not a 0.
set -uo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8
VERIFY=(python3 -I -S /tests/verify.py)
TEST_UID=65534
[ "$(id -u)" = 0 ] || { echo "tests/test.sh must run as root"; exit 1; }
kill_test_uid() {  # every process of the test uid (kill -1 reaches all that uid may signal)
    setpriv --reuid=$TEST_UID --regid=$TEST_UID --clear-groups --no-new-privs \
        bash --norc --noprofile -c 'kill -KILL -1' 2>/dev/null
}
kill_test_uid  # nothing of that uid left from before touches what it will read or write

# /logs/verifier is root's alone; the scratch directory (git's, then the tests') is inside it.
mkdir -p /logs/verifier && chown root:root /logs/verifier && chmod 755 /logs/verifier
scratch=/logs/verifier/scratch
rm -rf "$scratch" && mkdir -m 755 "$scratch" || exit 1
trap 'rm -rf "$scratch"' EXIT

# /testbed as the base commit left it, plus the agent's changes to the files it tracked:
# untracked files removed, test files put back (verify.py says how).
"${VERIFY[@]}" prepare "$scratch"
case $? in
    0) ;;
    3) exit 0 ;;  # the agent left no usable repository: reward 0 written, with the reason
    *) exit 1 ;;
esac

# The tests, as the test uid, in a clean environment; the report goes where only it writes.
# -I: no user site, PYTHON* ignored, no cwd on sys.path (pytest's pythonpath puts /testbed
# there); -c /dev/null and --confcutdir: no ini or conftest.py from outside /testbed is read.
mapfile -t ids < <("${VERIFY[@]}" ids)
out="$scratch/out"
mkdir -m 700 "$out" "$out/tmp" && chown "$TEST_UID:$TEST_UID" "$out" "$out/tmp" || exit 1
cd /testbed || exit 1
env -i PATH=/usr/bin:/bin HOME=/nonexistent LANG=C.UTF-8 TMPDIR="$out/tmp" \
    PYTHONPATH=/testbed PYTHONDONTWRITEBYTECODE=1 PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 \
    timeout -k 5 200 \
    setpriv --reuid=$TEST_UID --regid=$TEST_UID --clear-groups --no-new-privs \
    python3 -I -B -m pytest -c /dev/null --rootdir=/testbed --confcutdir=/testbed \
    -o pythonpath=/testbed -p no:cacheprovider --junitxml="$out/junit.xml" -q -rfE \
    "${ids[@]}"
echo "pytest exit status $? (not the reward)"

kill_test_uid  # nothing of the tests outlives them

# Each test's own outcome; written beside, then moved, by root.
"${VERIFY[@]}" judge "$out/junit.xml"

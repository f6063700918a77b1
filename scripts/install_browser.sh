#!/usr/bin/env bash
# Debian's Chromium and its chromedriver: the browser environment runs Chromium (over the
# DevTools protocol), and the rollout viewer's browser tests (tests/viewer/test_browser.py)
# drive both through selenium; nothing is downloaded at run or test time. Idempotent: does
# nothing when both are installed.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  exit 0
fi
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"  # apt_install
if ! apt_install chromium chromium-driver; then
  echo "ERROR: could not install chromium and chromium-driver (need root and apt-get):" >&2
  echo "ERROR: install them with your package manager; the viewer's tests need both." >&2
  exit 1
fi
command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1

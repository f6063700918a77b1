#!/usr/bin/env bash
# Debian's Chromium and its chromedriver, for the rollout viewer's browser tests
# (tests/viewer/test_browser.py drives them through selenium; nothing is downloaded
# at test time). Idempotent: does nothing when both are installed.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  exit 0
fi
apt_install() {  # apt_install PACKAGE...: install with apt-get, updating the lists only if needed
  if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    return 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1 && return 0
  apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1
}
if ! apt_install chromium chromium-driver; then
  echo "ERROR: could not install chromium and chromium-driver (need root and apt-get):" >&2
  echo "ERROR: install them with your package manager; the viewer's tests need both." >&2
  exit 1
fi
command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1

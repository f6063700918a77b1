#!/usr/bin/env bash
# The Vercel AI SDK's Open Responses provider (npm), a real Open Responses client: the tests
# drive palaestra's model and agent servers with it (tests/support/ai_sdk). Installed once per
# machine from its lock file into ~/.cache/palaestra/npm/<digest of the lock>; node and npm
# come from Debian when the machine has none. Prints the folder of its node_modules.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/apt.sh  # apt_install
if ! command -v npm >/dev/null 2>&1 && ! apt_install nodejs npm; then
  echo "install_node_clients: no node/npm and apt-get could not install them" >&2
  exit 1
fi
manifest=tests/support/ai_sdk
digest="$(cat "$manifest/package.json" "$manifest/package-lock.json" | sha256sum | cut -c1-16)"
target="$HOME/.cache/palaestra/npm/open-responses-$digest"
if [[ ! -f "$target/.installed" ]]; then
  rm -rf "$target"
  mkdir -p "$target"
  cp "$manifest/package.json" "$manifest/package-lock.json" "$target/"
  # The packages ask for node >= 22 (engines); they run on the machine's node 20, as the
  # tests show, so npm's engine warning is not shown.
  (cd "$target" && npm ci --no-audit --no-fund --loglevel=error 2>&1 | grep -v EBADENGINE || true)
  [[ -d "$target/node_modules/@ai-sdk/open-responses" ]]
  touch "$target/.installed"
fi
echo "$target/node_modules"

#!/bin/bash
# The oracle of terminal/permissions (account): a run must score 1.
set -euo pipefail
cd /app
groupadd orion-team
useradd --create-home --uid 2036 --shell /bin/sh --groups orion-team vega
mkdir -p /srv/lyra-project
chown vega:orion-team /srv/lyra-project
chmod 2770 /srv/lyra-project

#!/bin/bash
# The oracle of terminal/permissions (account): a run must score 1.
set -euo pipefail
cd /app
groupadd hydra-team
useradd --create-home --uid 2496 --shell /bin/bash --groups hydra-team borealis
mkdir -p /srv/lyra-project
chown borealis:hydra-team /srv/lyra-project
chmod 2770 /srv/lyra-project

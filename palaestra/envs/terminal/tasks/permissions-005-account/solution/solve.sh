#!/bin/bash
# The oracle of terminal/permissions (account): a run must score 1.
set -euo pipefail
cd /app
groupadd draco-team
useradd --create-home --uid 2454 --shell /bin/sh --groups draco-team cirrus
mkdir -p /srv/hydra-project
chown cirrus:draco-team /srv/hydra-project
chmod 2770 /srv/hydra-project

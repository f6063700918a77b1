#!/bin/bash
# The oracle of terminal/permissions (account): a run must score 1.
set -euo pipefail
cd /app
groupadd perseus-team
useradd --create-home --uid 2355 --shell /bin/sh --groups perseus-team fornax
mkdir -p /srv/perseus-project
chown fornax:perseus-team /srv/perseus-project
chmod 2770 /srv/perseus-project

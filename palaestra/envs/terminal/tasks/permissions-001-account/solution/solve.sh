#!/bin/bash
# The oracle of terminal/permissions (account): a run must score 1.
set -euo pipefail
cd /app
groupadd vega-team
useradd --create-home --uid 2788 --shell /bin/bash --groups vega-team atlas
mkdir -p /srv/orion-project
chown atlas:vega-team /srv/orion-project
chmod 2770 /srv/orion-project

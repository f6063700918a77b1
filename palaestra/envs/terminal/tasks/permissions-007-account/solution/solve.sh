#!/bin/bash
# The oracle of terminal/permissions (account): a run must score 1.
set -euo pipefail
cd /app
groupadd vega-team
useradd --create-home --uid 2589 --shell /bin/bash --groups vega-team perseus
mkdir -p /srv/fornax-project
chown perseus:vega-team /srv/fornax-project
chmod 2770 /srv/fornax-project

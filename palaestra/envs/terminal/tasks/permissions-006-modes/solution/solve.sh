#!/bin/bash
# The oracle of terminal/permissions (modes): a run must score 1.
set -euo pipefail
cd /app
chmod 0400 /app/share/cirrus.sh
chmod 0750 /app/share/fornax.sh
chmod 0755 /app/share/orion.sh
chmod 0400 /app/share/vega.conf
chown atlassvc /app/share/cirrus.sh

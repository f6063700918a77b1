#!/bin/bash
# The oracle of terminal/permissions (modes): a run must score 1.
set -euo pipefail
cd /app
chmod 0755 /app/share/fornax.sh
chmod 0755 /app/share/lyra.key
chmod 0400 /app/share/orion.conf
chmod 0600 /app/share/perseus.conf
chown cirrussvc /app/share/fornax.sh

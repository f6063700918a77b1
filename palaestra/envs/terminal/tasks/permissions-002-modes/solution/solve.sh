#!/bin/bash
# The oracle of terminal/permissions (modes): a run must score 1.
set -euo pipefail
cd /app
chmod 0750 /app/share/atlas.key
chmod 0700 /app/share/fornax.key
chmod 0700 /app/share/gemini.key
chmod 0644 /app/share/hydra.sh
chmod 0444 /app/share/perseus.conf
chmod 0640 /app/share/vega.key
chown dracosvc /app/share/atlas.key
chown dracosvc /app/share/fornax.key

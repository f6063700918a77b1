#!/bin/bash
# The oracle of terminal/permissions (modes): a run must score 1.
set -euo pipefail
cd /app
chmod 0700 /app/share/atlas.sh
chmod 0400 /app/share/cirrus.key
chmod 0444 /app/share/draco.sh
chmod 0755 /app/share/eridani.conf
chmod 0660 /app/share/fornax.conf
chmod 0444 /app/share/gemini.txt
chmod 0750 /app/share/lyra.txt
chmod 0755 /app/share/perseus.key
chown borealissvc /app/share/atlas.sh
chown borealissvc /app/share/cirrus.key

#!/bin/bash
# The oracle of terminal/permissions (modes): a run must score 1.
set -euo pipefail
cd /app
chmod 0700 /app/share/atlas.sh
chmod 0660 /app/share/fornax.conf
chmod 0444 /app/share/hydra.key
chmod 0644 /app/share/lyra.sh
chmod 0444 /app/share/orion.txt
chmod 0644 /app/share/perseus.txt
chown hydrasvc /app/share/atlas.sh
chown hydrasvc /app/share/fornax.conf

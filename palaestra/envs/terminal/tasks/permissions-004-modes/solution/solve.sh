#!/bin/bash
# The oracle of terminal/permissions (modes): a run must score 1.
set -euo pipefail
cd /app
chmod 0644 /app/share/draco.key
chmod 0644 /app/share/fornax.conf
chmod 0700 /app/share/gemini.conf
chmod 0750 /app/share/hydra.conf
chmod 0600 /app/share/lyra.key
chmod 0600 /app/share/orion.txt
chmod 0600 /app/share/perseus.key
chmod 0640 /app/share/vega.txt
chown cirrussvc /app/share/draco.key
chown cirrussvc /app/share/fornax.conf

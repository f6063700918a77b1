#!/bin/bash
# The oracle of terminal/scripting (dedupe): a run must score 1.
set -euo pipefail
cd /app
mkdir -p /app/bin
cat > /app/bin/dedupe <<'EOF'
#!/bin/sh
awk '!seen[$0]++' "$1"
EOF
chmod +x /app/bin/dedupe

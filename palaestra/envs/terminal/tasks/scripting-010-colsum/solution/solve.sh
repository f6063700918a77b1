#!/bin/bash
# The oracle of terminal/scripting (colsum): a run must score 1.
set -euo pipefail
cd /app
mkdir -p /app/bin
cat > /app/bin/colsum <<'EOF'
#!/bin/sh
awk -F';' '{ s += $3 } END { print s + 0 }' "$1"
EOF
chmod +x /app/bin/colsum

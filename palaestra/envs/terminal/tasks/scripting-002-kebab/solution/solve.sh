#!/bin/bash
# The oracle of terminal/scripting (kebab): a run must score 1.
set -euo pipefail
cd /app
mkdir -p /app/bin
cat > /app/bin/kebab <<'EOF'
#!/usr/bin/env python3
import re, sys
for line in open(sys.argv[1]).read().splitlines():
    spaced = re.sub(r'(?<=[a-z0-9])(?=[A-Z])', ' ', line)
    print('-'.join(p.lower() for p in re.split(r'[ _]+', spaced) if p))
EOF
chmod +x /app/bin/kebab

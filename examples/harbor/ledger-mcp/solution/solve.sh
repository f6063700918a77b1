#!/bin/bash
# The oracle speaks to the same server over its stdio, as the agent's tool calls do.
set -e
python3 /usr/lib/ledger/ledger_server.py <<'RPC'
{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}
{"jsonrpc": "2.0", "method": "notifications/initialized"}
{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "record", "arguments": {"name": "rent", "amount": 1200}}}
{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "record", "arguments": {"name": "food", "amount": 300}}}
RPC

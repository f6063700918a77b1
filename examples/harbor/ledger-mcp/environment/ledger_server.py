"""A small MCP server over stdio (standard library only): a ledger of named amounts.

Tools: ``record(name, amount)`` adds an entry to /app/ledger.json, ``total()`` sums it. It
speaks MCP's newline-delimited JSON-RPC: ``initialize`` (answered with the client's own
protocol version), ``tools/list`` and ``tools/call``; notifications are read and ignored.
"""

import json
import sys
from pathlib import Path

LEDGER = Path("/app/ledger.json")
TOOLS = [
    {
        "name": "record",
        "description": "Record an amount under a name in the ledger.",
        "inputSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "amount": {"type": "number"}},
            "required": ["name", "amount"],
        },
    },
    {
        "name": "total",
        "description": "The sum of every amount in the ledger.",
        "inputSchema": {"type": "object", "properties": {}},
    },
]


def entries():
    return json.loads(LEDGER.read_text()) if LEDGER.exists() else []


def call(name, arguments):
    if name == "record":
        ledger = entries() + [{"name": str(arguments["name"]), "amount": arguments["amount"]}]
        LEDGER.write_text(json.dumps(ledger))
        return f"recorded {arguments['name']}: {arguments['amount']}"
    if name == "total":
        return str(sum(entry["amount"] for entry in entries()))
    raise KeyError(name)


def answer(request):
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "ledger", "version": "1.0"},
        }
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        try:
            text, error = call(params.get("name"), params.get("arguments") or {}), False
        except (KeyError, TypeError, ValueError) as problem:
            text, error = f"cannot: {problem}", True
        return {"content": [{"type": "text", "text": text}], "isError": error}
    if method == "ping":
        return {}
    raise LookupError(method)


for line in sys.stdin:
    if not line.strip():
        continue
    request = json.loads(line)
    if "id" not in request:
        continue  # a notification
    try:
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": answer(request)}
    except LookupError as missing:
        error = {"code": -32601, "message": f"no method {missing}"}
        reply = {"jsonrpc": "2.0", "id": request["id"], "error": error}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()

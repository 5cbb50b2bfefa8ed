"""A stdio MCP server with one tool, `echo`, whose result is the object its caller sends
(`fields`), as `structuredContent` and as JSON text: the caller chooses the keys of the result,
as with any tool that echoes its input (issue 51: learnt result shapes must not carry one
person's keys into another's page). Raw JSON-RPC lines, no SDK."""

import json
import sys

ECHO = {"name": "echo", "description": "Answers with the object it is given",
        "inputSchema": {"type": "object", "properties": {"fields": {"type": "object"}}, "required": ["fields"]}}


def send(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if rid is None or method is None:
        continue  # notifications, and answers to requests this server never sends
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                                                     "capabilities": {"tools": {}}, "serverInfo": {"name": "echo", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [ECHO]}})
    elif method == "tools/call" and params.get("name") == "echo":
        fields = (params.get("arguments") or {}).get("fields")
        fields = fields if isinstance(fields, dict) else {}
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": json.dumps(fields)}], "structuredContent": fields}})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})

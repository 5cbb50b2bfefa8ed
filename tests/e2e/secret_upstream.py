"""A stdio MCP server that tells who it was started as: its tool `whoami` answers the
SECRET_TOKEN it was given in its environment and its process id. With EXTRA_TOOLS=1 it lists
one more tool (a person whose server lists other tools than the team's)."""

import json
import os
import sys

TOOLS = [{"name": "whoami", "description": "Says which credentials this process was started with",
          "inputSchema": {"type": "object", "properties": {}}}]
if os.environ.get("EXTRA_TOOLS") == "1":
    TOOLS.append({"name": "extra", "description": "Only some people's server has this", "inputSchema": {"type": "object"}})


def send(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if rid is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
              "capabilities": {"tools": {}}, "serverInfo": {"name": "secret-upstream", "version": "1.0.0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        who = {"secret": os.environ.get("SECRET_TOKEN", ""), "pid": os.getpid()}
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": json.dumps(who)}], "structuredContent": who}})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})

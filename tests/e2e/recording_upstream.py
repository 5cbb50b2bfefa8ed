"""A tiny MCP server over stdio that writes every message it receives to a JSONL file, so that
tests can see exactly what the proxy sent upstream (ids, progress tokens, cancellations).

Tools: `slow` (reports progress, answers after `seconds` unless cancelled), `add_tool`,
`remove_tool` and `describe_tool` (change the tool list and announce tools/list_changed), `meta`
(returns unusual fields to check transparency). `--extra-tools N` adds extra_0..extra_N-1.
"""

import json
import sys
import threading
import time

LOG = open(sys.argv[1], "a", buffering=1)
EXTRA = int(sys.argv[sys.argv.index("--extra-tools") + 1]) if "--extra-tools" in sys.argv else 0
lock = threading.Lock()
extra_tools: list[dict] = []
removed: set = set()
descriptions: dict = {}
cancelled: set = set()


def send(msg: dict) -> None:
    with lock:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def tools() -> list[dict]:
    base = [
        {"name": "slow", "description": "Answers after a pause", "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
        {"name": "add_tool", "description": "Adds a tool", "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
        {"name": "remove_tool", "description": "Removes a tool", "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
        {"name": "describe_tool", "description": "Changes a tool's description", "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}, "description": {"type": "string"}}, "required": ["name", "description"]}},
        {"name": "meta", "description": "Unusual fields", "inputSchema": {"type": "object"}, "_meta": {"vendor/x": 1, "ui": {"visibility": ["model", "app"]}}},
    ]
    generated = [{"name": f"extra_{i}", "description": f"Extra tool number {i}", "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}} for i in range(EXTRA)]
    tools = [dict(t, description=descriptions.get(t["name"], t["description"])) for t in base + generated + extra_tools if t["name"] not in removed]
    return tools


def slow(req_id, params) -> None:
    token = params.get("_meta", {}).get("progressToken")
    seconds = params.get("arguments", {}).get("seconds", 3)
    steps = 10
    for i in range(steps):
        if req_id in cancelled:
            return
        if token is not None:
            send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": i, "total": steps}})
        time.sleep(seconds / steps)
    if req_id not in cancelled:
        send({"jsonrpc": "2.0", "id": req_id, "result": {"content": [{"type": "text", "text": "slow done"}]}})


for line in sys.stdin:
    msg = json.loads(line)
    LOG.write(json.dumps(msg) + "\n")
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": params.get("protocolVersion"), "capabilities": {"tools": {"listChanged": True}}, "serverInfo": {"name": "recording", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools()}})
    elif method == "tools/call":
        name = params.get("name")
        if name == "slow":
            threading.Thread(target=slow, args=(rid, params), daemon=True).start()
        elif name == "add_tool":
            extra_tools.append({"name": params["arguments"]["name"], "description": "added at run time", "inputSchema": {"type": "object"}})
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "added"}]}})
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        elif name in ("remove_tool", "describe_tool"):
            target = params["arguments"]["name"]
            if name == "remove_tool":
                removed.add(target)
            else:
                descriptions[target] = params["arguments"]["description"]
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "ok"}]}})
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        elif name == "meta":
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "x", "annotations": {"audience": ["user"]}, "_meta": {"k": "v"}}], "structuredContent": {"a": [1, 2]}, "_meta": {"vendor/trace": "abc"}, "futureField": {"x": True}}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": f"unknown tool {name}"}})
    elif method == "notifications/cancelled":
        cancelled.add(params.get("requestId"))
    elif rid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})

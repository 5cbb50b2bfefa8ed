"""A tiny MCP server over stdio for size and volume tests.

Tools: `big` returns one text block of `bytes` bytes (default 5 MB); `flood` sends `count`
`notifications/message` (logging) notifications of about `size` bytes each, in batches of
`batch` with a short pause between batches (so a reader that keeps up never falls behind),
then answers "flooded N".
"""

import json
import sys
import threading
import time

lock = threading.Lock()


def send(msg: dict) -> None:
    line = json.dumps(msg) + "\n"
    with lock:
        sys.stdout.write(line)
        sys.stdout.flush()


TOOLS = [
    {"name": "big", "description": "Returns a large text", "inputSchema": {"type": "object", "properties": {"bytes": {"type": "integer"}}}},
    {"name": "flood", "description": "Sends many log notifications", "inputSchema": {"type": "object", "properties": {
        "count": {"type": "integer"}, "size": {"type": "integer"}, "batch": {"type": "integer"}, "pause": {"type": "number"}}}},
]


def flood(rid, args) -> None:
    count, size = args.get("count", 1000), args.get("size", 500)
    batch, pause = args.get("batch", 500), args.get("pause", 0.005)
    pad = "x" * size
    for i in range(count):
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "logger": "flood", "data": f"{i} {pad}"}})
        if (i + 1) % batch == 0:
            time.sleep(pause)
    send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": f"flooded {count}"}]}})


for line in sys.stdin:
    msg = json.loads(line)
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": params.get("protocolVersion"), "capabilities": {"tools": {}, "logging": {}}, "serverInfo": {"name": "big", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        args = params.get("arguments") or {}
        if params.get("name") == "big":
            n = args.get("bytes", 5 * 1024 * 1024)
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "B" * n}]}})
        elif params.get("name") == "flood":
            threading.Thread(target=flood, args=(rid, args), daemon=True).start()
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": f"unknown tool {params.get('name')}"}})
    elif rid is not None and method is not None:
        if method == "ping" or method == "logging/setLevel":
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})

"""A stdio MCP server whose answers are written by hand (issue 53, results as read): spaces after
colons, a key order of its own, a non-ASCII escape. Raw JSON-RPC lines, no SDK; each call on its
own thread, so calls of several people are in flight at once.

Tools: `echo` (text, ms: answers after ms milliseconds), `fail` (text: a tool error, isError)."""

import json
import sys
import threading
import time

out_lock = threading.Lock()
TOOLS = [
    {"name": "echo", "description": "Answers with the text, after ms milliseconds",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}, "ms": {"type": "integer"}}, "required": ["text"]}},
    {"name": "fail", "description": "Fails with the text (a tool error)",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
]


def write(line: str) -> None:
    with out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def answer(rid, result: dict) -> None:
    write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}))


def call(rid, name: str, args: dict) -> None:
    text = json.dumps(str(args.get("text", "")))
    if name == "echo":
        time.sleep(min(int(args.get("ms", 0)), 5000) / 1000)
        # Written by hand: the bytes a proxy that passes results as read gives back as they are.
        write('{"result" : {"content": [{"type": "text", "text": %s}], "spaced" : [1, 2], "name": "\\u00e9t\\u00e9"},'
              ' "jsonrpc": "2.0", "id": %s}' % (text, json.dumps(rid)))
    elif name == "fail":
        write('{"jsonrpc":"2.0","id":%s,"result":{"isError": true, "content":[{"type":"text","text":%s}]}}' % (json.dumps(rid), text))
    else:
        write(json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": f"no tool {name}"}}))


for line in sys.stdin:
    if not line.strip():
        continue
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if rid is None:
        continue  # notifications
    if method == "initialize":
        answer(rid, {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                     "serverInfo": {"name": "as-read", "version": "1"}})
    elif method == "tools/list":
        answer(rid, {"tools": TOOLS})
    elif method == "tools/call":
        p = msg.get("params", {})
        threading.Thread(target=call, args=(rid, p.get("name"), p.get("arguments") or {}), daemon=True).start()
    elif method == "ping":
        answer(rid, {})
    else:
        write(json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "method not found"}}))

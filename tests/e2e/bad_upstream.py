"""A stdio MCP server that misbehaves on demand, for the hardening tests (issue 9).

Usage: bad_upstream.py [--log FILE] [--down-file FILE] [anything else, ignored]
  --log FILE        append every message received, one JSON per line (like recording_upstream.py)
  --down-file FILE  if FILE exists at start, exit at once with status 1 (an upstream that stays down)
Other arguments (say `--token SECRET`) are ignored, so tests can check they never show up.

Tools:
  echo {text}                      answers text
  garbage_then_answer {text}       first writes a non-UTF-8 line, a non-JSON line, a JSON line that is
                                   not an object and a JSON object that is not JSON-RPC, then answers text
  big {bytes}                      answers with a text of that many bytes (one long line)
  wait {seconds?, progress_interval?}
                                   answers "waited" after `seconds` (never, if absent); meanwhile sends
                                   progress every `progress_interval` seconds when the request has a
                                   progress token; stops on notifications/cancelled
  die                              exits at once with status 3, answering nothing
"""

import json
import os
import sys
import threading
import time


def arg(name):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


DOWN_FILE = arg("--down-file")
if DOWN_FILE and os.path.exists(DOWN_FILE):
    sys.exit(1)
LOG = open(arg("--log"), "a", buffering=1) if arg("--log") else None
OUT = sys.stdout.buffer
lock = threading.Lock()
cancelled: set = set()


def write_raw(data: bytes) -> None:
    with lock:
        OUT.write(data)
        OUT.flush()


def send(msg: dict) -> None:
    write_raw(json.dumps(msg).encode() + b"\n")


def text_result(rid, text: str) -> None:
    send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}})


def obj(properties: dict) -> dict:
    return {"type": "object", "properties": properties}


TOOLS = [
    {"name": "echo", "description": "Answers its text", "inputSchema": obj({"text": {"type": "string"}})},
    {"name": "garbage_then_answer", "description": "Writes bad lines, then answers", "inputSchema": obj({"text": {"type": "string"}})},
    {"name": "big", "description": "Answers a long text", "inputSchema": obj({"bytes": {"type": "integer"}})},
    {"name": "wait", "description": "Answers after a pause, with progress", "inputSchema": obj({"seconds": {"type": "number"}, "progress_interval": {"type": "number"}})},
    {"name": "die", "description": "Exits without answering", "inputSchema": obj({})},
]


def wait(rid, params) -> None:
    args = params.get("arguments") or {}
    token = (params.get("_meta") or {}).get("progressToken")
    seconds, interval = args.get("seconds"), args.get("progress_interval")
    start = time.monotonic()
    next_progress, step = start, 0
    while seconds is None or time.monotonic() - start < seconds:
        if rid in cancelled:
            return
        if token is not None and interval and time.monotonic() >= next_progress:
            send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": step}})
            step += 1
            next_progress += interval
        time.sleep(0.02)
    if rid not in cancelled:
        text_result(rid, "waited")


def call(rid, params) -> None:
    name, args = params.get("name"), params.get("arguments") or {}
    if name == "echo":
        text_result(rid, args.get("text", ""))
    elif name == "garbage_then_answer":
        write_raw(b"\xff\xfe\xfd not UTF-8 \xc3\x28\n")
        write_raw(b"this line is not JSON\n")
        write_raw(b'"a JSON string, not an object"\n')
        write_raw(b'{"hello": "a JSON object that is not JSON-RPC"}\n')
        text_result(rid, args.get("text", ""))
    elif name == "big":
        text_result(rid, "x" * int(args.get("bytes", 1000)))
    elif name == "wait":
        threading.Thread(target=wait, args=(rid, params), daemon=True).start()
    elif name == "die":
        os._exit(3)
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": f"unknown tool {name}"}})


for line in sys.stdin:
    msg = json.loads(line)
    if LOG:
        LOG.write(json.dumps(msg) + "\n")
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": params.get("protocolVersion"), "capabilities": {"tools": {}}, "serverInfo": {"name": "bad", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        call(rid, params)
    elif method == "notifications/cancelled":
        cancelled.add(params.get("requestId"))
    elif rid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})

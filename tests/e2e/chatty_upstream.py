"""A stdio MCP server that speaks toward hosts while it works (issue 41): during a call it asks the
host things (`sampling/createMessage`, `elicitation/create`, `roots/list`), logs
(`notifications/message`, with the SECRET_TOKEN it was started with, as chatty servers do) and
says a resource changed (`notifications/resources/updated`). Raw JSON-RPC lines, no SDK.

stdin is read on one thread; each tools/call runs on its own thread, so several calls can be in
flight at once and a call can wait for the host's answer to the request it sent (answers come
back on stdin as responses with the id used here). Writes to stdout hold one lock."""

import itertools
import json
import os
import sys
import threading
import time

TOKEN = os.environ.get("SECRET_TOKEN") or "none"
ANSWER_WAIT_S = 20.0
NOTES = ("alice", "bob", "shared")


def tool(name, description, properties=None, required=()):
    return {"name": name, "description": description,
            "inputSchema": {"type": "object", "properties": properties or {}, "required": list(required)}}


# Before it asks, the server waits for a `hold` to be running in this process (wait_hold: so that
# another call is surely in flight when it asks), then delay_ms.
WHEN = {"wait_hold": {"type": "boolean"}, "delay_ms": {"type": "integer"}}
TEXT = {"text": {"type": "string"}, **WHEN}
TOOLS = [
    tool("ask", "Asks the host's model (sampling/createMessage) and answers what it said", TEXT, ["text"]),
    tool("confirm", "Asks the host's user (elicitation/create) and answers what they said", TEXT, ["text"]),
    tool("roots", "Asks the host for its roots (roots/list)", WHEN),
    tool("hold", "Sleeps ms milliseconds (at most 10000), then answers", {"ms": {"type": "integer"}}, ["ms"]),
    tool("log", "Sends a log line (notifications/message) with the text and this process's token; with after_ms, "
         "that long after answering (a line that belongs to no call)",
         {"text": {"type": "string"}, "level": {"type": "string"}, "after_ms": {"type": "integer"}}, ["text"]),
    tool("touch", "Says a resource changed (notifications/resources/updated)", {"uri": {"type": "string"}}, ["uri"]),
    tool("whoami", "Says which credentials this process was started with"),
    tool("notify", "Says things no host asked about (issue 51): a task's status, an elicitation's completion and a "
         "notification of its own, each with the text; with after_ms, that long after answering",
         {"text": {"type": "string"}, "after_ms": {"type": "integer"}}, ["text"]),
    tool("ask_later", "Answers at once, then asks the host's model (sampling/createMessage) delay_ms later; "
         "later_answers says what came back", {"text": {"type": "string"}, "delay_ms": {"type": "integer"}}, ["text"]),
    tool("later_answers", "What the asks made after their calls were answered got back, oldest first"),
]
RESOURCES = [{"uri": f"note://{n}", "name": f"note of {n}", "mimeType": "text/plain"} for n in NOTES]

out_lock = threading.Lock()
pending_lock = threading.Lock()
pending: dict = {}  # our request id -> [threading.Event, answer or None]
ids = itertools.count(1)
holding_cond = threading.Condition()
holding = 0  # hold calls running now
last_text = ""  # the text of the newest call: what a method this server has of its own shows
later: list = []  # what ask_later's requests got back


def send(msg: dict) -> None:
    line = json.dumps(msg) + "\n"
    with out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def result(rid, res: dict) -> None:
    send({"jsonrpc": "2.0", "id": rid, "result": res})


def error(rid, code: int, message: str) -> None:
    send({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


def text_result(rid, text: str, is_error: bool = False) -> None:
    res = {"content": [{"type": "text", "text": text}]}
    if is_error:
        res["isError"] = True
    result(rid, res)


def ask_host(method: str, params: dict) -> dict:
    """Sends a server request and waits for the host's answer (a response message); a
    JSON-RPC error is made up here when none comes in time."""
    sid = f"s-{next(ids)}"
    slot = [threading.Event(), None]
    with pending_lock:
        pending[sid] = slot
    send({"jsonrpc": "2.0", "id": sid, "method": method, "params": params})
    got = slot[0].wait(ANSWER_WAIT_S)
    with pending_lock:
        pending.pop(sid, None)
    if not got or slot[1] is None:
        return {"error": {"code": -32001, "message": f"no answer to {method} within {ANSWER_WAIT_S:.0f} s"}}
    return slot[1]


def refused(answer: dict) -> str:
    return "refused: " + str((answer.get("error") or {}).get("message", ""))


def millis(value, most: int = 10000) -> int:
    try:
        return max(0, min(int(value or 0), most))
    except (TypeError, ValueError):
        return 0


def hold(ms: int) -> None:
    global holding
    with holding_cond:
        holding += 1
        holding_cond.notify_all()
    try:
        time.sleep(ms / 1000)
    finally:
        with holding_cond:
            holding -= 1


def notify_all(text: str) -> None:
    send({"jsonrpc": "2.0", "method": "notifications/tasks/status",
          "params": {"taskId": "task-1", "status": "working", "statusMessage": text}})
    send({"jsonrpc": "2.0", "method": "notifications/elicitation/complete", "params": {"elicitationId": "el-" + text}})
    send({"jsonrpc": "2.0", "method": "notifications/x-chatty/said", "params": {"text": text, "token": TOKEN}})


def ask_later(text: str, delay_ms: int) -> None:
    time.sleep(delay_ms / 1000)
    answer = ask_host("sampling/createMessage", {
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}], "maxTokens": 50})
    later.append(answer)


def call_tool(rid, params: dict) -> None:
    global last_text
    name, args = params.get("name"), params.get("arguments") or {}
    if args.get("text"):
        last_text = str(args.get("text"))
    if name in ("ask", "confirm", "roots"):
        if args.get("wait_hold"):
            with holding_cond:
                holding_cond.wait_for(lambda: holding > 0, 10.0)
        time.sleep(millis(args.get("delay_ms")) / 1000)
    if name == "ask":
        answer = ask_host("sampling/createMessage", {
            "messages": [{"role": "user", "content": {"type": "text", "text": str(args.get("text", ""))}}], "maxTokens": 50})
        if "error" in answer:
            return text_result(rid, refused(answer), True)
        content = (answer.get("result") or {}).get("content") or {}
        return text_result(rid, "sampled: " + str(content.get("text", "")))
    if name == "confirm":
        answer = ask_host("elicitation/create", {"message": str(args.get("text", "")), "requestedSchema": {
            "type": "object", "properties": {"ok": {"type": "boolean"}}}})
        if "error" in answer:
            return text_result(rid, refused(answer), True)
        return text_result(rid, "elicited: " + json.dumps((answer.get("result") or {}).get("content")))
    if name == "roots":
        answer = ask_host("roots/list", {})
        if "error" in answer:
            return text_result(rid, refused(answer), True)
        return text_result(rid, "roots: " + json.dumps((answer.get("result") or {}).get("roots")))
    if name == "hold":
        hold(millis(args.get("ms")))
        return text_result(rid, "held")
    if name == "log":
        line = {"jsonrpc": "2.0", "method": "notifications/message", "params": {
            "level": str(args.get("level") or "info"), "logger": "chatty", "data": f"{args.get('text', '')} token={TOKEN}"}}
        after = millis(args.get("after_ms"))
        if after:
            threading.Timer(after / 1000, send, args=(line,)).start()
        else:
            send(line)
        return text_result(rid, "logged")
    if name == "touch":
        send({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": str(args.get("uri", ""))}})
        return text_result(rid, "touched")
    if name == "notify":
        after = millis(args.get("after_ms"))
        if after:
            threading.Timer(after / 1000, notify_all, args=(str(args.get("text", "")),)).start()
        else:
            notify_all(str(args.get("text", "")))
        return text_result(rid, "notified")
    if name == "ask_later":
        threading.Thread(target=ask_later, args=(str(args.get("text", "")), millis(args.get("delay_ms"))), daemon=True).start()
        return text_result(rid, "will ask")
    if name == "later_answers":
        return result(rid, {"content": [{"type": "text", "text": json.dumps(later)}], "structuredContent": {"answers": later}})
    if name == "whoami":
        who = {"secret": TOKEN if TOKEN != "none" else "", "pid": os.getpid()}
        return result(rid, {"content": [{"type": "text", "text": json.dumps(who)}], "structuredContent": who})
    error(rid, -32602, f"Unknown tool: {name}")


def on_request(msg: dict) -> None:
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method == "initialize":
        result(rid, {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                     "capabilities": {"tools": {}, "resources": {"subscribe": True, "listChanged": True}, "logging": {}},
                     "serverInfo": {"name": "chatty-upstream", "version": "1.0.0"}})
    elif method == "tools/list":
        result(rid, {"tools": TOOLS})
    elif method == "tools/call":
        threading.Thread(target=call_tool, args=(rid, params), daemon=True).start()
    elif method == "resources/list":
        result(rid, {"resources": RESOURCES})
    elif method == "resources/read":
        uri = params.get("uri", "")
        if uri not in {r["uri"] for r in RESOURCES}:
            return error(rid, -32002, f"Resource not found: {uri}")
        result(rid, {"contents": [{"uri": uri, "mimeType": "text/plain", "text": "note of " + uri.split("://", 1)[1]}]})
    elif method in ("resources/subscribe", "resources/unsubscribe", "logging/setLevel", "ping"):
        result(rid, {})
    elif isinstance(method, str) and method.startswith(("x-", "tasks/")):
        # Methods of its own (and the tasks a careless server keeps for everyone): they show the
        # newest caller's text and this process's token to whoever asks.
        result(rid, {"method": method, "last": last_text, "token": TOKEN, "tasks": [{"taskId": "task-1", "statusMessage": last_text}]})
    else:
        error(rid, -32601, f"Method not found: {method}")


def main() -> None:
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict):
            continue
        if "method" not in msg:
            # The host's answer to one of our requests.
            with pending_lock:
                slot = pending.get(msg.get("id"))
            if slot is not None:
                slot[1] = msg
                slot[0].set()
            continue
        if msg.get("id") is None:
            continue  # notifications: nothing to do
        on_request(msg)


if __name__ == "__main__":
    main()

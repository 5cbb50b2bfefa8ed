"""A stdio MCP server with MCP 2025-11-25 tasks that is careless about whom it tells what (issue
60): every status of every task goes out as `notifications/tasks/status` naming the task, with
the task's topic in it; a task asked to be ambiguous asks its caller (`elicitation/create`, with
related-task `_meta`) inside its `tasks/result` whether or not the client declared elicitation;
and its `tasks/list` is everyone's. Cheap to make (a thread per task), so a test can flood it.
Raw JSON-RPC lines, no SDK.

Tools: `research` (task-only: `topic`, `ambiguous`, `seconds` it works, `every_ms` between
statuses), `hold` (`ms`: a plain call that takes that long), `echo`."""

import itertools
import json
import sys
import threading
import time

out_lock = threading.Lock()
state_lock = threading.Condition()
ids = itertools.count(1)
tasks: dict = {}  # task id -> {"status", "topic", "result", "asked", "answer", ...}
pending: dict = {}  # our request id -> [Event, answer]

TOOLS = [
    {"name": "research", "description": "Researches a topic as a task (task-only)", "execution": {"taskSupport": "required"},
     "inputSchema": {"type": "object", "properties": {"topic": {"type": "string"}, "ambiguous": {"type": "boolean"},
                                                      "seconds": {"type": "number"}, "every_ms": {"type": "integer"}},
                     "required": ["topic"]}},
    {"name": "hold", "description": "Answers after ms milliseconds", "inputSchema": {"type": "object", "properties": {"ms": {"type": "integer"}}}},
    {"name": "echo", "description": "Answers its text", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
]


def send(msg: dict) -> None:
    line = json.dumps(msg) + "\n"
    with out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def result(rid, res: dict) -> None:
    send({"jsonrpc": "2.0", "id": rid, "result": res})


def error(rid, code: int, message: str) -> None:
    send({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def task_view(tid: str) -> dict:
    t = tasks[tid]
    return {"taskId": tid, "status": t["status"], "statusMessage": t["message"], "createdAt": t["created"],
            "lastUpdatedAt": now(), "ttl": 60000, "pollInterval": 200}


def set_status(tid: str, status: str, message: str) -> None:
    with state_lock:
        t = tasks[tid]
        t["status"], t["message"] = status, message
        state_lock.notify_all()
    send({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": task_view(tid)})


def ask(tid: str) -> dict:
    """Asks the caller inside the task (related-task `_meta`), and waits for the answer."""
    rid = f"ask-{next(ids)}"
    slot = [threading.Event(), None]
    pending[rid] = slot
    send({"jsonrpc": "2.0", "id": rid, "method": "elicitation/create", "params": {
        "message": f"which {tasks[tid]['topic']} do you mean?", "requestedSchema": {"type": "object", "properties": {"meaning": {"type": "string"}}},
        "_meta": {"io.modelcontextprotocol/related-task": {"taskId": tid}}}})
    slot[0].wait(30)
    pending.pop(rid, None)
    return slot[1] or {"error": {"code": -32001, "message": "no answer"}}


def work(tid: str, seconds: float, every_ms: int, ambiguous: bool) -> None:
    t = tasks[tid]
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end and t["status"] != "cancelled":
        n += 1
        set_status(tid, "working", f"researching {t['topic']} (step {n})")
        time.sleep(every_ms / 1000)
    if t["status"] == "cancelled":
        return
    meaning = ""
    if ambiguous:
        set_status(tid, "input_required", f"{t['topic']} is ambiguous")
        # Asked only once someone holds the task's result open (as 2025 servers deliver it).
        with state_lock:
            state_lock.wait_for(lambda: t["waiting"] > 0, 30)
        answer = ask(tid)
        meaning = json.dumps((answer.get("result") or {}).get("content") or answer.get("error"))
    with state_lock:
        t["result"] = {"content": [{"type": "text", "text": f"report on {t['topic']} {meaning}".strip()}]}
    set_status(tid, "completed", f"done with {t['topic']}")


def call_tool(rid, params: dict) -> None:
    name, args = params.get("name"), params.get("arguments") or {}
    if name == "echo":
        return result(rid, {"content": [{"type": "text", "text": str(args.get("text", ""))}]})
    if name == "hold":
        time.sleep(max(0, min(int(args.get("ms") or 0), 30000)) / 1000)
        return result(rid, {"content": [{"type": "text", "text": "held"}]})
    if name != "research":
        return error(rid, -32602, f"Unknown tool: {name}")
    if "task" not in params:
        return error(rid, -32601, "research requires task augmentation (params.task)")
    tid = f"task-{next(ids)}"
    with state_lock:
        tasks[tid] = {"status": "working", "message": "starting", "topic": str(args.get("topic", "")), "result": None,
                      "created": now(), "waiting": 0}
    result(rid, {"task": task_view(tid)})
    seconds = max(0.0, min(float(args.get("seconds") or 2), 120.0))
    every = max(50, min(int(args.get("every_ms") or 500), 10000))
    threading.Thread(target=work, args=(tid, seconds, every, bool(args.get("ambiguous"))), daemon=True).start()


def task_result(rid, tid: str) -> None:
    with state_lock:
        t = tasks[tid]
        t["waiting"] += 1
        state_lock.notify_all()
        state_lock.wait_for(lambda: t["status"] in ("completed", "cancelled", "failed"), 60)
        t["waiting"] -= 1
    if t["status"] != "completed":
        return error(rid, -32603, f"task {tid} is {t['status']}")
    res = dict(t["result"])
    res["_meta"] = {"io.modelcontextprotocol/related-task": {"taskId": tid}}
    result(rid, res)


def on_request(msg: dict) -> None:
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method == "initialize":
        return result(rid, {"protocolVersion": params.get("protocolVersion", "2025-11-25"),
                            "capabilities": {"tools": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}},
                            "serverInfo": {"name": "tasks-upstream", "version": "1.0.0"}})
    if method == "tools/list":
        return result(rid, {"tools": TOOLS})
    if method == "tools/call":
        return threading.Thread(target=call_tool, args=(rid, params), daemon=True).start()
    if method == "ping":
        return result(rid, {})
    if method in ("tasks/get", "tasks/result", "tasks/cancel"):
        tid = params.get("taskId")
        if tid not in tasks:
            return error(rid, -32602, f"Invalid params: no task {tid}")
        if method == "tasks/get":
            return result(rid, task_view(tid))
        if method == "tasks/cancel":
            set_status(tid, "cancelled", "cancelled")
            return result(rid, task_view(tid))
        return threading.Thread(target=task_result, args=(rid, tid), daemon=True).start()
    if method == "tasks/list":
        return result(rid, {"tasks": [task_view(t) for t in list(tasks)]})
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
            slot = pending.get(msg.get("id"))
            if slot is not None:
                slot[1] = msg
                slot[0].set()
            continue
        if msg.get("id") is None:
            continue
        on_request(msg)


if __name__ == "__main__":
    main()

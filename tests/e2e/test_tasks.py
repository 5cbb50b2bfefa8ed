"""Issue 50: tasks (long-running tool calls) through the service, with the real server that ships
them (server-everything 2026.8.31: `simulate-research-query`, taskSupport required, with an
`input_required` elicitation when the topic is ambiguous). Each person's task is their own:
alice and bob side by side (the people and raw channels of test_isolation.py), canaries in
alice's topic and in her answers, and whatever bob asks of her task is exactly what an unknown
task id gets. With several servers the tasks are routed back to the server that made them; a
host that does not speak tasks calls a task-only tool as a plain tool and gets its result."""

import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import everything_cmd, everything_http, proxy_http, wait_for
from test_isolation import Person, Session, finish, pair, text

TOKENS = {"alice": "alice-token-41-8f3c2e1d9a", "bob": "bob-token-41-5b7e0c4a1f6d"}
TASKS_CAPS = {"tasks": {"list": {}, "cancel": {}}, "elicitation": {}}
STAGES = ["Gathering sources...", "Analyzing content...", "Synthesizing findings...", "Generating report..."]
RESEARCH = "simulate-research-query"


class Researcher(Person):
    """A person whose host answers the research query's clarification with their own canary."""

    def answer(self, method: str, params: dict):
        if method == "elicitation/create":
            return {"action": "accept", "content": {"interpretation": f"{self.tag} meaning"}}
        return super().answer(method, params)


@pytest.fixture
def people():
    yield from pair(Researcher)


def tokens() -> list[str]:
    return [a for p, t in TOKENS.items() for a in ("--auth-token", f"{p}:{t}")]


@pytest.fixture(scope="module")
def one():
    """server-everything over Streamable HTTP behind --upstream-url: one server, its own names
    and task ids. On HTTP what it asks during a call comes on that call's stream, and inside a
    task names the task: whose it is, is known (over a pipe shared by two people it would not
    be, and the server would not be offered asking at all)."""
    with everything_http("streamableHttp") as url:
        argv = ["--upstream-url", url, "--log-format", "json", *tokens()]
        with proxy_http(argv, name="proxy-tasks-one") as (base, proc):
            yield type("Svc", (), {"base": base, "proc": proc})()


@pytest.fixture(scope="module")
def several(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tasks-several")
    node, script = everything_cmd("stdio")[0], everything_cmd("stdio")[1:]
    servers = {"everything": {"command": node, "args": script},
               "other": {"command": sys.executable, "args": [str(__import__("pathlib").Path(__file__).parent / "chatty_upstream.py")]}}
    (folder / "servers.json").write_text(json.dumps({"mcpServers": servers}))
    with proxy_http(["--servers-file", str(folder / "servers.json"), *tokens()], name="proxy-tasks-several") as (base, proc):
        yield type("Svc", (), {"base": base})()


def tool_names(s: Session) -> dict:
    tools = {}
    cursor = None
    while True:
        got = s.rpc("tools/list", {"cursor": cursor} if cursor else {})["result"]
        tools.update({t["name"]: t for t in got["tools"]})
        cursor = got.get("nextCursor")
        if not cursor:
            return tools


def start_task(s: Session, tool: str, topic: str, ambiguous: bool = False) -> str:
    got = s.rpc("tools/call", {"name": tool, "arguments": {"topic": topic, "ambiguous": ambiguous}, "task": {"ttl": 60000}})
    assert "task" in got.get("result", {}), f"a task was to be made: {got}"
    return got["result"]["task"]["taskId"]


def refusal(answer: dict) -> tuple:
    assert "error" in answer, answer
    return answer["error"]["code"], answer["error"]["message"]


def as_unknown(answer: dict, asked: str, unknown_answer: dict, unknown: str) -> bool:
    code, message = refusal(answer)
    return (code, message.replace(asked, "<id>")) == (unknown_answer["error"]["code"], unknown_answer["error"]["message"].replace(unknown, "<id>"))


def wait_until_listed(s: Session, task_id: str, want) -> dict:
    def listed():
        for t in s.rpc("tasks/list", {})["result"]["tasks"]:
            if t["taskId"] == task_id and want(t):
                return t
        return None
    return wait_for(listed, 20, f"{task_id} in tasks/list")


# --- 1: with one server and two people, a task is its maker's -------------------------------------------------


def test_with_one_server_a_task_is_its_makers_alone(one, people):
    alice, bob = people
    a = Session(one, alice, "A", caps=TASKS_CAPS)
    b = Session(one, bob, "B", caps=TASKS_CAPS)
    assert "tasks" in a.rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": TASKS_CAPS,
                                           "clientInfo": {"name": "x", "version": "1"}})["result"]["capabilities"]
    assert tool_names(a)[RESEARCH]["execution"]["taskSupport"] == "required", "a host that speaks tasks sees the tool as it is"
    task = start_task(a, RESEARCH, f"{alice.tag} my tax return")
    unknown = "no-such-task-0000"
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        theirs, nobodys = b.rpc(method, {"taskId": task}), b.rpc(method, {"taskId": unknown})
        assert as_unknown(theirs, task, nobodys, unknown), f"bob's {method} of alice's task: {theirs} (an unknown id: {nobodys})"
    assert task not in json.dumps(b.rpc("tasks/list", {})), "bob's tasks/list shows alice's task"
    got = a.rpc("tasks/get", {"taskId": task})["result"]
    assert got["taskId"] == task and got["status"] in ("working", "completed"), got
    result = a.rpc("tasks/result", {"taskId": task}, timeout=30)["result"]
    assert f"{alice.tag} my tax return" in result["content"][0]["text"], result
    assert result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"] == task
    wait_until_listed(a, task, lambda t: t["status"] == "completed")
    finish(alice, bob)


def test_what_the_server_asks_inside_a_task_goes_to_its_owner(one, people):
    alice, bob = people
    a = Session(one, alice, "A", caps=TASKS_CAPS)
    b = Session(one, bob, "B", caps=TASKS_CAPS)  # also able to answer, also calling
    task = start_task(a, RESEARCH, f"{alice.tag} jaguar", ambiguous=True)
    with ThreadPoolExecutor(2) as pool:
        theirs = pool.submit(b.call, "echo", message=f"{bob.tag} hello")
        result = a.rpc("tasks/result", {"taskId": task}, timeout=30)["result"]
        theirs.result(30)
    asked = [r for _, r in a.asked if r["method"] == "elicitation/create"]
    assert asked and asked[0]["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"] == task, a.asked
    assert f"{alice.tag} meaning" in result["content"][0]["text"], f"her answer shaped her report: {result}"
    assert not bob.asked, f"bob was asked inside alice's task: {bob.asked}"
    finish(alice, bob)


# --- 2: with several servers, tasks go back to the server that made them ---------------------------------------


def test_with_several_servers_tasks_are_routed_to_their_server(several, people):
    alice, bob = people
    a = Session(several, alice, "A", caps=TASKS_CAPS)
    b = Session(several, bob, "B", caps=TASKS_CAPS)
    init = a.rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": TASKS_CAPS, "clientInfo": {"name": "x", "version": "1"}})
    assert init["result"]["capabilities"]["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}, init
    tool = "everything__" + RESEARCH
    wait_for(lambda: tool in tool_names(a), 20, "server-everything's task tool listed")
    task = start_task(a, tool, f"{alice.tag} several")
    assert task.startswith("everything:"), task
    assert a.rpc("tasks/get", {"taskId": task})["result"]["taskId"] == task
    result = a.rpc("tasks/result", {"taskId": task}, timeout=30)["result"]
    assert f"{alice.tag} several" in result["content"][0]["text"], result
    wait_until_listed(a, task, lambda t: t["status"] == "completed")
    assert refusal(b.rpc("tasks/get", {"taskId": task}))[0] == -32602
    second = start_task(a, tool, f"{alice.tag} to cancel")
    cancelled = a.rpc("tasks/cancel", {"taskId": second})["result"]
    assert cancelled["taskId"] == second and cancelled["status"] == "cancelled", cancelled
    finish(alice, bob)


# --- 3: a host that does not speak tasks ------------------------------------------------------------------------


def test_a_host_without_tasks_calls_a_task_only_tool_as_a_plain_tool(one, people):
    alice, bob = people
    a = Session(one, alice, "A-plain", caps={"elicitation": {}})
    b = Session(one, bob, "B", caps=TASKS_CAPS)
    tool = tool_names(a)[RESEARCH]
    assert "execution" not in tool, f"to a host without tasks it is a plain tool: {tool}"
    answer = a.rpc("tools/call", {"name": RESEARCH, "arguments": {"topic": f"{alice.tag} plain"}, "_meta": {"progressToken": "pt-1"}}, timeout=30)
    assert f"{alice.tag} plain" in text(answer), answer
    assert "_meta" not in answer["result"] or "io.modelcontextprotocol/related-task" not in answer["result"]["_meta"], answer
    progress = a.got(lambda m: m.get("method") == "notifications/progress" and m["params"].get("progressToken") == "pt-1")
    said = [p["params"].get("message") for p in progress]
    # Every status, in order, the first included: the server sets it before its answer names
    # the task, and the service holds it for that answer (without, it went to no one).
    assert list(dict.fromkeys(s for s in said if s in STAGES)) == STAGES, f"the task's status as progress: {said}"
    counts = [p["params"]["progress"] for p in progress]
    assert counts == sorted(counts) and len(set(counts)) == len(counts), f"progress only grows: {counts}"
    # Its clarification, asked inside the task, is the caller's to answer.
    answer = a.rpc("tools/call", {"name": RESEARCH, "arguments": {"topic": f"{alice.tag} python", "ambiguous": True}}, timeout=30)
    assert f"{alice.tag} meaning" in text(answer), answer
    assert not bob.asked
    # Nothing of the task the service ran is bob's, nor in his list.
    assert alice.tag not in json.dumps(b.rpc("tasks/list", {}))
    finish(alice, bob)


def test_cancelling_a_bridged_call_cancels_its_task(one, people):
    alice, bob = people
    a = Session(one, alice, "A-plain", caps={})
    watcher = Session(one, alice, "A-tasks", caps=TASKS_CAPS)
    before = {t["taskId"] for t in watcher.rpc("tasks/list", {})["result"]["tasks"]}
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(a.rpc, "tools/call", {"name": RESEARCH, "arguments": {"topic": f"{alice.tag} cancel me"}}, 8, "bridged-1")
        time.sleep(1.0)
        # While it runs: the task the service made for a host without tasks is never listed.
        assert not pending.done(), "the bridged call still runs"
        assert before == {t["taskId"] for t in watcher.rpc("tasks/list", {})["result"]["tasks"]}, "a running bridged task listed"
        from test_closed_by_default import cancel
        cancel(a, "bridged-1")
        try:
            pending.result(10)
        except (AssertionError, OSError):
            pass
    assert before == {t["taskId"] for t in watcher.rpc("tasks/list", {})["result"]["tasks"]}, "a bridged task is never the host's to list"

    def cancelled():
        lines = [json.loads(x) for x in one.proc.log_path.read_text().splitlines() if x.startswith("{")]
        return [x for x in lines if x.get("event") == "bridged_task_cancelled" and x.get("status") == "cancelled"]
    wait_for(cancelled, 10, "the task the call ran as cancelled on server-everything (its answer: status cancelled)")
    finish(alice, bob)


# --- both eras: a 2026-07-28 host gets the tasks extension from a 2025 server -----------------------------------


EXT = "io.modelcontextprotocol/tasks"


def post26(svc, person, method: str, params: dict, declared: bool = True, caps: dict | None = None) -> dict:
    from test_protocol_2026 import meta
    from test_protocol_2026 import post as post_2026
    c = dict(caps if caps is not None else {"elicitation": {}})
    if declared:
        c["extensions"] = {EXT: {}}
    headers = {"Authorization": f"Bearer {person.token}"}
    if "taskId" in params:
        headers["Mcp-Name"] = params["taskId"]
    rid = f"{method}-{time.monotonic_ns()}"
    status, _, body = post_2026(svc.base, method, params, rid=rid, headers=headers, with_meta=meta(ui=False, caps=c))
    msgs = body if isinstance(body, list) else [body]
    person.hear(f"2026 {method}", json.dumps(body))
    return next(m for m in msgs if m.get("id") == rid)


def poll26(svc, person, task: str, until, timeout: float = 20) -> dict:
    return wait_for(lambda: (lambda r: r if until(r) else None)(post26(svc, person, "tasks/get", {"taskId": task})["result"]), timeout,
                    f"task {task} as wanted")


def test_a_2026_host_gets_the_tasks_extension_and_its_task_is_its_own(one, people):
    alice, bob = people
    from test_protocol_2026 import meta
    from test_protocol_2026 import post as post_2026
    _, _, disc = post_2026(one.base, "server/discover", {}, headers={"Authorization": f"Bearer {alice.token}"}, with_meta=meta(ui=False))
    caps = disc["result"]["capabilities"]
    assert EXT in caps.get("extensions", {}) and "tasks" not in caps, caps
    made = post26(one, alice, "tools/call", {"name": RESEARCH, "arguments": {"topic": f"{alice.tag} 2026", "ambiguous": True}})["result"]
    assert made["resultType"] == "task" and "task" not in made and "ttlMs" in made, made
    task = made["taskId"]
    waiting = poll26(one, alice, task, lambda r: r["status"] == "input_required")
    (key, asked), = waiting["inputRequests"].items()
    assert asked["method"] == "elicitation/create", asked
    # bob: exactly an unknown task, whatever he does with it.
    for method, params in (("tasks/get", {}), ("tasks/update", {"inputResponses": {key: {"action": "accept", "content": {"interpretation": "BOB"}}}}),
                           ("tasks/cancel", {})):
        theirs = post26(one, bob, method, {"taskId": task, **params})
        nobodys = post26(one, bob, method, {"taskId": "no-such-task-0000", **params})
        assert as_unknown(theirs, task, nobodys, "no-such-task-0000"), (method, theirs, nobodys)
    ack = post26(one, alice, "tasks/update", {"taskId": task, "inputResponses": {key: {"action": "accept", "content": {"interpretation": f"{alice.tag} meaning"}}}})
    assert ack["result"] == {"resultType": "complete", **({"_meta": ack["result"]["_meta"]} if "_meta" in ack["result"] else {})}, ack
    done = poll26(one, alice, task, lambda r: r["status"] in ("completed", "failed"))
    assert done["status"] == "completed" and f"{alice.tag} meaning" in done["result"]["content"][0]["text"], done
    assert "io.modelcontextprotocol/related-task" not in json.dumps(done), "2026 has no related-task meta"
    # Not part of 2026, and not without the extension.
    assert post26(one, alice, "tasks/result", {"taskId": task})["error"]["code"] == -32601
    assert post26(one, alice, "tasks/list", {})["error"]["code"] == -32601
    assert post26(one, alice, "tasks/get", {"taskId": task}, declared=False)["error"]["code"] == -32021
    # Without the extension the call is the service's to run as a task: a plain call, its result.
    plain = post26(one, alice, "tools/call", {"name": RESEARCH, "arguments": {"topic": f"{alice.tag} bridged"}}, declared=False)
    assert plain["result"]["resultType"] == "complete" and f"{alice.tag} bridged" in plain["result"]["content"][0]["text"], plain
    finish(alice, bob)


# --- issue 63: a 2026 host without the extension (the Python SDK's default) gets the bridge --------------------


def test_the_python_sdk_in_its_default_mode_calls_a_task_only_tool_and_can_cancel_it():
    """The official Python SDK (2.3, `mode="auto"`: MCP 2026-07-28, no tasks extension) calls
    server-everything's task-only tool through the service as a plain call: the service runs it
    as a task, passes its statuses on as progress, answers with the result, and cancels the
    task on the server when the client gives up on the call (aborting its POST)."""
    import anyio
    from mcp import Client

    with everything_http("streamableHttp") as url:
        with proxy_http(["--upstream-url", url, "--log-format", "json"], name="proxy-tasks-py26") as (base, proc):
            async def run():
                async with Client(base + "/mcp", mode="auto") as c:
                    assert c.protocol_version == "2026-07-28"
                    listed = {t.name: t for t in (await c.list_tools()).tools}
                    assert RESEARCH in listed
                    said = []

                    async def on_progress(progress, total, message):
                        said.append(message)

                    got = await c.call_tool(RESEARCH, {"topic": "py26-topic-5c1"}, progress_callback=on_progress)
                    assert not got.is_error and "py26-topic-5c1" in got.content[0].text, got
                    assert list(dict.fromkeys(s for s in said if s in STAGES)) == STAGES, f"every status as progress, the first too: {said}"
                    # Given up on once it runs: the POST goes, and the task with it.
                    started = anyio.Event()

                    async def on_slow(progress, total, message):
                        started.set()

                    async with anyio.create_task_group() as tg:
                        tg.start_soon(lambda: c.call_tool(RESEARCH, {"topic": "py26-cancel-me"}, progress_callback=on_slow))
                        with anyio.fail_after(20):
                            await started.wait()
                        tg.cancel_scope.cancel()

            anyio.run(run)

            def cancelled():
                lines = [json.loads(x) for x in proc.log_path.read_text().splitlines() if x.startswith("{")]
                return [x for x in lines if x.get("event") == "bridged_task_cancelled" and x.get("status") == "cancelled"]
            wait_for(cancelled, 15, "the task the call ran as cancelled on server-everything")


@pytest.fixture(scope="module")
def piped():
    """server-everything over stdio, one server: its task statuses come as notifications that
    name no request (whose they are: the task's)."""
    with proxy_http(["--upstream", " ".join(everything_cmd("stdio")), "--log-format", "json", *tokens()],
                    name="proxy-tasks-piped") as (base, proc):
        yield type("Svc", (), {"base": base, "proc": proc})()


def test_a_2026_listen_hears_each_status_of_its_own_tasks_and_none_of_anothers(piped, people):
    """notifications/tasks on subscriptions/listen (the extension's filter, notifications.taskIds):
    alice's listen takes her task and not bob's; bob's listen naming her task takes nothing;
    hers hears each status, the last with the result inline, and his hears none of it."""
    from test_isolation import Listen
    alice, bob = people
    one = piped
    task = post26(one, alice, "tools/call", {"name": RESEARCH, "arguments": {"topic": f"{alice.tag} listened"}})["result"]["taskId"]
    his = post26(one, bob, "tools/call", {"name": RESEARCH, "arguments": {"topic": f"{bob.tag} his own"}})["result"]["taskId"]
    caps = {"extensions": {EXT: {}}}
    la = Listen(one, alice, "LA", {"taskIds": [task, his]}, caps=caps)
    lb = Listen(one, bob, "LB", {"taskIds": [task, his]}, caps=caps)
    ack = la.ack()["params"]
    assert ack["notifications"].get("taskIds") == [task], ack
    assert [r["reason"] for r in ack.get("refused", [])] == ["task not found"], "his task is an unknown one to her"
    assert lb.ack()["params"]["notifications"].get("taskIds") == [his], "his own task only: hers is not his to hear of"
    la.wait(lambda m: m.get("method") == "notifications/tasks" and m["params"]["status"] == "completed", "her task's end", 30)
    seen = [m["params"] for m in la.got(lambda m: m.get("method") == "notifications/tasks")]
    assert {p["taskId"] for p in seen} == {task}, seen
    assert any(p.get("statusMessage") in STAGES for p in seen if p["status"] == "working"), seen
    done = seen[-1]
    assert done["result"]["resultType"] == "complete" and f"{alice.tag} listened" in done["result"]["content"][0]["text"], done
    assert la.got(lambda m: m.get("method") == "notifications/tasks")[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == la.id
    lb.wait(lambda m: m.get("method") == "notifications/tasks" and m["params"]["status"] == "completed", "his task's end", 30)
    assert {m["params"]["taskId"] for m in lb.got(lambda m: m.get("method") == "notifications/tasks")} == {his}, "bob heard of her task"
    assert alice.tag not in json.dumps(lb.got(lambda m: True)), "bob heard of her task"
    finish(alice, bob)


# --- every edge: legacy SSE and stdio ----------------------------------------------------------------------------


def test_over_legacy_sse_a_task_is_its_makers_alone(one, people):
    from test_isolation import Legacy
    alice, bob = people
    a, b = Legacy(one, alice, "SSE-A", caps=TASKS_CAPS), Legacy(one, bob, "SSE-B", caps=TASKS_CAPS)
    made = a.rpc("tools/call", {"name": RESEARCH, "arguments": {"topic": f"{alice.tag} over sse"}, "task": {"ttl": 60000}})
    task = made["result"]["task"]["taskId"]
    assert as_unknown(b.rpc("tasks/get", {"taskId": task}), task, b.rpc("tasks/get", {"taskId": "nope-1"}), "nope-1")
    assert task not in json.dumps(b.rpc("tasks/list", {}))
    result = a.rpc("tasks/result", {"taskId": task}, timeout=30)
    assert f"{alice.tag} over sse" in result["result"]["content"][0]["text"], result
    finish(alice, bob)


def test_a_stdio_host_without_tasks_gets_a_task_only_tools_result():
    import asyncio

    from mcpclient import session

    async def run():
        async with session("stdio", ["--upstream", " ".join(everything_cmd("stdio"))], ui=False) as s:
            listed = {t.name: t for t in (await s.list_tools()).tools}
            assert getattr(listed[RESEARCH], "execution", None) is None, listed[RESEARCH]
            got = await s.call_tool(RESEARCH, {"topic": "stdio-topic-7f3"})
            assert not got.is_error and "stdio-topic-7f3" in got.content[0].text, got
    asyncio.run(run())


# --- host-side tasks: the server asks the host to run sampling as a task -----------------------------------------


class TaskHost(Session):
    """A host that runs the server's sampling as a task of its own (`tasks.requests`), and
    answers the server's polls of it."""

    def __init__(self, *a, **kw):
        self.host_tasks: dict = {}
        self.polls: list = []
        super().__init__(*a, **kw)

    def reply_to(self, where: str, req: dict) -> dict:
        method, params = req.get("method", ""), req.get("params") or {}
        if method == "sampling/createMessage" and "task" in params:
            with self.lock:
                self.asked.append((where, req))
            with self.person.lock:
                self.person.asked.append((f"{self.label} {where}", req))
            tid = f"host-task-{len(self.host_tasks) + 1}"
            self.host_tasks[tid] = super().reply_to(where, {**req, "params": {k: v for k, v in params.items() if k != "task"}})["result"]
            return {"jsonrpc": "2.0", "id": req["id"], "result": {"task": {"taskId": tid, "status": "working", "pollInterval": 500}}}
        if method in ("tasks/get", "tasks/result"):
            self.polls.append((method, params.get("taskId")))
            tid = params.get("taskId")
            if tid not in self.host_tasks:
                return {"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32602, "message": f"no task {tid}"}}
            if method == "tasks/get":
                done = sum(1 for m, t in self.polls if m == "tasks/get" and t == tid) > 1
                return {"jsonrpc": "2.0", "id": req["id"], "result": {"taskId": tid, "status": "completed" if done else "working"}}
            return {"jsonrpc": "2.0", "id": req["id"], "result": self.host_tasks[tid]}
        return super().reply_to(where, req)


def test_a_server_asks_a_host_to_run_sampling_as_a_task_and_polls_that_host_only(one, people):
    alice, bob = people
    caps = {"sampling": {}, "tasks": {"requests": {"sampling": {"createMessage": {}}}}}
    a = TaskHost(one, alice, "A-host-tasks", caps=caps)
    b = Session(one, bob, "B", caps={"sampling": {}})
    assert "trigger-sampling-request-async" in tool_names(a)
    with ThreadPoolExecutor(2) as pool:
        triggered = pool.submit(a.call, "trigger-sampling-request-async", prompt=f"{alice.tag} private prompt")
        wait_for(lambda: a.host_tasks, 10, "the sampling run as a task by alice's host")
        busy = pool.submit(b.call, "trigger-long-running-operation", duration=3, steps=3)
        got = text(triggered.result(30))
        busy.result(30)
    assert "Task created" in got and "completed" in got, got
    assert f"{alice.tag} answers" in got, f"the result came from her host's task: {got}"
    assert [m for m, _ in a.polls if m == "tasks/get"] and ("tasks/result", "host-task-1") in a.polls, a.polls
    assert not bob.asked, f"bob was polled about alice's task: {bob.asked}"
    # A host that does not run tasks is asked plainly: the server takes the result at once.
    plain = Session(one, alice, "A-plain", caps={"sampling": {}})
    got = text(plain.call("trigger-sampling-request-async", prompt=f"{alice.tag} plain"))
    assert got.startswith("[SYNC]") and f"{alice.tag} answers" in got, got
    finish(alice, bob)


# --- replicas: a task made through one is used through another ---------------------------------------------------


def test_a_task_made_through_one_replica_is_its_owners_through_another(tmp_path, people):
    """Two replicas sharing a real redis-server, in front of one HTTP server whose tasks outlive
    the connection that made them (the conformance fixture keeps them in one store for all
    its sessions, as a server backed by a database does)."""
    import contextlib

    from conftest import Proc, free_port, wait_port
    from replica_peers import Redis, wait_redis_status
    from test_protocol_2026 import FIXTURE, NODE22
    alice, bob = people
    redis = Redis()
    port = free_port()
    fixture = Proc("tasks-fixture-http", [NODE22, str(FIXTURE), "http", str(port)])
    try:
        wait_port(port)
        url = f"http://127.0.0.1:{port}/mcp"
        with contextlib.ExitStack() as stack:
            reps = []
            for i in (1, 2):
                base, _ = stack.enter_context(proxy_http(["--upstream-url", url, "--redis-url", redis.url, *tokens()], name=f"proxy-tasks-rep{i}"))
                wait_redis_status(base, "ok")
                reps.append(type("Svc", (), {"base": base})())
            a1 = Session(reps[0], alice, "A-rep1", caps=TASKS_CAPS)
            made = a1.rpc("tools/call", {"name": "slow_compute", "arguments": {"seconds": 1, "label": f"{alice.tag} replicated"}, "task": {"ttl": 60000}})
            task = made["result"]["task"]["taskId"]
            a2, b2 = Session(reps[1], alice, "A-rep2", caps=TASKS_CAPS), Session(reps[1], bob, "B-rep2", caps=TASKS_CAPS)
            assert as_unknown(b2.rpc("tasks/get", {"taskId": task}), task, b2.rpc("tasks/get", {"taskId": "nope-2"}), "nope-2"), "bob, through B"
            got = a2.rpc("tasks/get", {"taskId": task})["result"]
            assert got["taskId"] == task, got
            result = a2.rpc("tasks/result", {"taskId": task}, timeout=30)["result"]
            assert f"{alice.tag} replicated" in json.dumps(result), result
            # A 2026 host of hers, through B: the same task, its result inline.
            done = poll26(reps[1], alice, task, lambda r: r["status"] == "completed")
            assert f"{alice.tag} replicated" in json.dumps(done["result"]), done
            finish(alice, bob)
    finally:
        fixture.stop()
        redis.stop()

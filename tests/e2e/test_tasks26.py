"""Issue 63: a 2026-07-28 server's own tasks. The server is built on PyPI `fastmcp-tasks` 4.1.4
(tests/e2e/tasks26_server.py; the one shipped runtime of the tasks extension): its task-only
tools refuse a call without the extension (-32021), its tool list says nothing of tasks, and it
sends no notifications (a task is seen only by polling `tasks/get`). The service declares the
extension to it. A host that asks for a task gets the server's own, the way its era reads tasks
(a 2025 host with tasks that sends `task`: tasks/get, tasks/result, tasks/cancel; a 2026 host
that declared the extension: the task flat, tasks/get, tasks/update, its listen). For any other
call the service runs the task for the call that made it, and the call gets the result (each
status as progress, the task's question asked of the caller, the call given up cancelling the
task). alice and bob side by side, canaries in their topics."""

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import ROOT, Proc, free_port, proxy_http, wait_for, wait_port
from test_isolation import TOKENS, Person, Session, finish, pair, text

PYTHON = ROOT / "tests" / ".venv-tasks26" / "bin" / "python"
SERVER = ROOT / "tests" / "e2e" / "tasks26_server.py"
TASKS_CAPS = {"tasks": {"list": {}, "cancel": {}}, "elicitation": {}}


class Deep(Person):
    """A person whose host answers the server's question (how deep?) with "deep"."""

    def answer(self, method: str, params: dict):
        if method == "elicitation/create":
            return {"action": "accept", "content": {"depth": "deep"}}
        return super().answer(method, params)


@pytest.fixture
def people():
    yield from pair(Deep)


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    log = tmp_path_factory.mktemp("tasks26") / "server.log"
    log.write_text("")
    port = free_port()
    server = Proc(f"tasks26-{port}", [str(PYTHON), str(SERVER), "http", str(port)], env={"TASKS26_LOG": str(log)})
    try:
        wait_port(port, timeout=60)
        argv = ["--upstream-url", f"http://127.0.0.1:{port}/mcp", "--log-format", "json"]
        argv += [a for p, t in TOKENS.items() for a in ("--auth-token", f"{p}:{t}")]
        with proxy_http(argv, name="proxy-tasks26") as (base, proc):
            yield type("Svc", (), {"base": base, "proc": proc, "log": log})()
    finally:
        server.stop()


def progress_of(s: Session, token: str) -> list[str]:
    return [m["params"].get("message") for m in s.got(lambda m: m.get("method") == "notifications/progress"
                                                      and m["params"].get("progressToken") == token)]


def test_a_2025_host_with_or_without_tasks_calls_the_task_only_tool_and_hears_each_status(svc, people):
    alice, bob = people
    a = Session(svc, alice, "A-plain", caps={"elicitation": {}})
    b = Session(svc, bob, "B-tasks", caps=TASKS_CAPS)
    listed = {t["name"]: t for t in a.rpc("tools/list", {})["result"]["tools"]}
    assert "research" in listed and "execution" not in listed["research"], listed.get("research")

    def call(s: Session, who: Person, token: str):
        return s.rpc("tools/call", {"name": "research", "arguments": {"topic": f"{who.tag} reefs"}, "_meta": {"progressToken": token}}, timeout=60)

    with ThreadPoolExecutor(2) as pool:
        hers, his = pool.submit(call, a, alice, "pt-a"), pool.submit(call, b, bob, "pt-b")
        hers, his = hers.result(), his.result()
    assert text(hers) == f"Report on {alice.tag} reefs (depth=default)", hers
    assert text(his) == f"Report on {bob.tag} reefs (depth=default)", his
    for s, who in ((a, alice), (b, bob)):
        said = progress_of(s, "pt-a" if who is alice else "pt-b")
        wanted = [f"gathering sources {i}/3 for {who.tag} reefs" for i in (1, 2, 3)] + [f"writing report on {who.tag} reefs"]
        assert [m for m in said if m in wanted] == wanted, f"{who.name}'s statuses as progress, in order: {said}"
        other = bob if who is alice else alice
        assert not any(other.tag in (m or "") for m in said), f"{who.name} heard the other's task: {said}"
    finish(alice, bob)


def test_what_the_task_asks_is_asked_of_its_caller_alone(svc, people):
    alice, bob = people
    a = Session(svc, alice, "A", caps={"elicitation": {}})
    b = Session(svc, bob, "B", caps={"elicitation": {}})
    with ThreadPoolExecutor(1) as pool:
        his = pool.submit(b.call, "slow", seconds=4, marker="bob-idle-call", timeout=60)
        hers = a.call("research", topic=f"{alice.tag} owls", ask=True, timeout=60)
        assert text(his.result(60)) == "slept 4.0"
    assert text(hers) == f"Report on {alice.tag} owls (depth=accept:deep)", hers
    assert [r for _, r in alice.asked if r["method"] == "elicitation/create"], "she was asked how deep"
    assert not bob.asked, f"bob was asked about her task: {bob.asked}"
    finish(alice, bob)


RELATED = "io.modelcontextprotocol/related-task"


def test_a_2025_host_that_asks_for_a_task_gets_the_servers_own_the_2025_way(svc, people):
    """A 2025 host with tasks that asks for one (`task` in its call) gets the server's task as
    2025 names it: CreateTaskResult, tasks/get (status only), tasks/result (polled to the end
    for it; the task's question asked with related-task _meta on that stream; the result with
    it), statuses as notifications/tasks/status. Each person's task is theirs alone."""
    from test_tasks import as_unknown
    alice, bob = people
    a = Session(svc, alice, "A-t", caps=TASKS_CAPS)
    b = Session(svc, bob, "B-t", caps=TASKS_CAPS)
    caps = a.rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": TASKS_CAPS,
                                "clientInfo": {"name": "x", "version": "1"}})["result"]["capabilities"]
    assert caps.get("tasks", {}).get("requests", {}).get("tools", {}).get("call") == {}, caps
    listed = {t["name"]: t for t in a.rpc("tools/list", {})["result"]["tools"]}
    assert listed["research"].get("execution") == {"taskSupport": "optional"}, "a tool a 2025 host may ask a task of"
    plain_host = {t["name"]: t for t in Session(svc, alice, "A-p", caps={}).rpc("tools/list", {})["result"]["tools"]}
    assert "execution" not in plain_host["research"], "not to a host without tasks"
    made = {}
    for s, who, ask in ((a, alice, True), (b, bob, False)):
        got = s.rpc("tools/call", {"name": "research", "arguments": {"topic": f"{who.tag} tides", "ask": ask}, "task": {"ttl": 60000}})
        task = got.get("result", {}).get("task")
        assert task and set(got["result"]) == {"task"} and task["status"] == "working", f"{who.name}: a 2025 task: {got}"
        assert not {"ttlMs", "pollIntervalMs", "resultType"} & set(task) and task["ttl"] and task["pollInterval"], task
        made[who.name] = task["taskId"]
    unknown = "no-such-task-0000"
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        theirs, nobodys = b.rpc(method, {"taskId": made["alice"]}), b.rpc(method, {"taskId": unknown})
        assert as_unknown(theirs, made["alice"], nobodys, unknown), f"bob's {method} of alice's task: {theirs}"
    got = a.rpc("tasks/get", {"taskId": made["alice"]})["result"]
    assert got["taskId"] == made["alice"] and got["status"] in ("working", "input_required"), got
    assert not {"result", "inputRequests", "error", "ttlMs", "resultType"} & set(got), f"tasks/get tells the status only: {got}"
    with ThreadPoolExecutor(2) as pool:
        hers = pool.submit(a.rpc, "tasks/result", {"taskId": made["alice"]}, 60)
        his = pool.submit(b.rpc, "tasks/result", {"taskId": made["bob"]}, 60)
        hers, his = hers.result(70)["result"], his.result(70)["result"]
    for result, who, depth in ((hers, alice, "accept:deep"), (his, bob, "default")):
        assert text({"result": result}) == f"Report on {who.tag} tides (depth={depth})", result
        assert result["_meta"][RELATED]["taskId"] == made[who.name], result
    asked = [r for _, r in alice.asked if r["method"] == "elicitation/create"]
    assert len(asked) == 1 and alice.tag in asked[0]["params"]["message"], alice.asked
    assert asked[0]["params"]["_meta"][RELATED]["taskId"] == made["alice"], "asked inside her task, and it says so"
    assert not bob.asked, f"bob was asked: {bob.asked}"
    for s, who in ((a, alice), (b, bob)):
        said = [m["params"] for m in s.got(lambda m: m.get("method") == "notifications/tasks/status")]
        assert said and {p["taskId"] for p in said} == {made[who.name]}, f"{who.name}'s statuses: {said}"
        assert any(f"writing report on {who.tag} tides" == p.get("statusMessage") for p in said), said
    assert a.rpc("tasks/get", {"taskId": made["alice"]})["result"]["status"] == "completed"
    finish(alice, bob)


def test_a_2025_host_cancels_its_task_on_the_server_and_is_told_its_status(svc, people):
    alice, bob = people
    a = Session(svc, alice, "A-c", caps=TASKS_CAPS)
    b = Session(svc, bob, "B-c", caps=TASKS_CAPS)
    marker = f"c25-{os.getpid()}-{time.monotonic_ns()}"
    task = a.rpc("tools/call", {"name": "slow", "arguments": {"seconds": 30, "marker": marker}, "task": {"ttl": 60000}})["result"]["task"]["taskId"]
    wait_for(lambda: f"started {marker}" in svc.log.read_text(), 15, "the task started on the server")
    # bob's cancel of her task is an unknown task's, and leaves it running.
    assert b.rpc("tasks/cancel", {"taskId": task})["error"]["code"] == -32602
    assert a.rpc("tasks/get", {"taskId": task})["result"]["status"] == "working"
    done = a.rpc("tasks/cancel", {"taskId": task})["result"]
    assert done["taskId"] == task and done["status"] == "cancelled", f"2025's cancel answers with the task: {done}"
    wait_for(lambda: f"cancelled {marker}" in svc.log.read_text(), 10, "the task cancelled on the server")
    finish(alice, bob)


def test_a_2026_host_with_the_extension_polls_the_servers_task_and_one_without_gets_the_result(svc, people):
    """A 2026 host that declared the extension gets the server's task (flat) to poll, answers
    its question with tasks/update, and its listen hears each status; bob's task beside hers,
    each unknown to the other. Without the extension, the call's result."""
    from test_isolation import Listen
    from test_tasks import EXT, as_unknown, poll26, post26
    alice, bob = people
    made = {}
    for who, ask in ((alice, True), (bob, False)):
        got = post26(svc, who, "tools/call", {"name": "research", "arguments": {"topic": f"{who.tag} kelp", "ask": ask}})["result"]
        assert got["resultType"] == "task" and got["status"] == "working" and "ttlMs" in got and "task" not in got, got
        made[who.name] = got["taskId"]
    la = Listen(svc, alice, "LA", {"taskIds": [made["alice"], made["bob"]]}, caps={"extensions": {EXT: {}}})
    assert la.ack()["params"]["notifications"].get("taskIds") == [made["alice"]], "her own task only"
    waiting = poll26(svc, alice, made["alice"], lambda r: r["status"] == "input_required", timeout=30)
    (key, asked), = waiting["inputRequests"].items()
    assert asked["method"] == "elicitation/create" and alice.tag in asked["params"]["message"], asked
    theirs = post26(svc, bob, "tasks/get", {"taskId": made["alice"]})
    assert as_unknown(theirs, made["alice"], post26(svc, bob, "tasks/get", {"taskId": "no-such-0"}), "no-such-0"), theirs
    ack = post26(svc, alice, "tasks/update", {"taskId": made["alice"], "inputResponses": {key: {"action": "accept", "content": {"depth": "deep"}}}})
    assert "error" not in ack, ack
    for who, depth in ((alice, "accept:deep"), (bob, "default")):
        done = poll26(svc, who, made[who.name], lambda r: r["status"] in ("completed", "failed"), timeout=30)
        assert done["status"] == "completed" and done["result"]["content"][0]["text"] == f"Report on {who.tag} kelp (depth={depth})", done
    la.wait(lambda m: m.get("method") == "notifications/tasks" and m["params"]["status"] == "completed", "her task's end", 30)
    heard = [m["params"] for m in la.got(lambda m: m.get("method") == "notifications/tasks")]
    assert {p["taskId"] for p in heard} == {made["alice"]} and bob.tag not in json.dumps(heard), heard
    assert any(p.get("statusMessage", "").startswith("gathering sources") for p in heard), heard
    plain = post26(svc, bob, "tools/call", {"name": "research", "arguments": {"topic": f"{bob.tag} plain"}}, declared=False)
    assert plain["result"]["resultType"] == "complete" and text(plain) == f"Report on {bob.tag} plain (depth=default)", plain
    finish(alice, bob)


def test_a_failed_task_is_the_calls_error_and_a_plain_tool_stays_plain(svc, people):
    alice, bob = people
    a = Session(svc, alice, "A", caps={})
    failed = a.call("fail_protocol", timeout=30)
    assert failed.get("error", {}).get("code") == -32000 and "upstream exploded" in failed["error"]["message"], failed
    assert text(a.call("plain", x=41)) == "42"
    finish(alice, bob)


def test_giving_up_on_the_call_cancels_its_task_on_the_server(svc, people):
    from test_closed_by_default import cancel
    alice, bob = people
    a = Session(svc, alice, "A", caps={})
    marker = f"cancel-{os.getpid()}-{time.monotonic_ns()}"
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(a.rpc, "tools/call", {"name": "slow", "arguments": {"seconds": 30, "marker": marker}}, 40, "slow-1")
        wait_for(lambda: f"started {marker}" in svc.log.read_text(), 15, "the task started on the server")
        cancel(a, "slow-1")
        try:
            pending.result(10)
        except (AssertionError, OSError):
            pass
    wait_for(lambda: f"cancelled {marker}" in svc.log.read_text(), 10, "the task cancelled on the server")
    lines = [json.loads(x) for x in svc.proc.log_path.read_text().splitlines() if x.startswith("{")]
    assert any(x.get("event") == "upstream_task_cancelled" for x in lines)
    finish(alice, bob)

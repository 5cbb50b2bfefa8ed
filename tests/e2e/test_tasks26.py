"""Issue 63: a 2026-07-28 server's own tasks. The server is built on PyPI `fastmcp-tasks` 4.1.4
(tests/e2e/tasks26_server.py; the one shipped runtime of the tasks extension): its task-only
tools refuse a call without the extension (-32021), its tool list says nothing of tasks, and it
sends no notifications (a task is seen only by polling `tasks/get`). The service declares the
extension to it and runs each task for the call that made it: every host kind calls the tool
and gets the result: a 2025 host without tasks, a 2025 host with them, a 2026 host with the
extension and one without; each status as progress, the task's question asked of the caller,
the call given up cancelling the task. alice and bob side by side, canaries in their topics."""

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import ROOT, Proc, free_port, proxy_http, wait_for, wait_port
from test_isolation import TOKENS, Person, Session, Stateless, finish, pair, text

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


def test_a_2026_host_with_or_without_the_extension_gets_the_result(svc, people):
    alice, bob = people
    with_ext = Stateless(svc, alice, "S-A", caps={"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
    without = Stateless(svc, bob, "S-B", caps={"elicitation": {}})
    got = with_ext.call("research", topic=f"{alice.tag} kelp", ask=True)
    assert got["result"].get("resultType") == "complete" and text(got) == f"Report on {alice.tag} kelp (depth=accept:deep)", got
    got = without.call("research", topic=f"{bob.tag} kelp")
    assert text(got) == f"Report on {bob.tag} kelp (depth=default)", got
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

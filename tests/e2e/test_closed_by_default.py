"""Issue 51: what the service does not know never crosses people. One shared stdio server
(chatty_upstream.py) passed through as it is, alice and bob side by side with canaries (the
people and channels of test_isolation.py): methods the service has never heard of are a use of
the server under the rules and in the trail. Whose a server's message is, is known by
construction (issue 60), never guessed from timing: a stdio server shared by several people
cannot say whose its requests, log lines and notifications are, so it is not offered sampling,
elicitation or roots, and what it says that names no call goes to no one (kept back, counted);
on a service for one person (one token) all of it is that person's, whether a call is in flight
or not. Each test first checks that what must arrive did."""

import json
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import free_port, metric, proxy_http, wait_for
from test_auth import request
from test_isolation import ALL_CAPS, Session, Stateless, finish, pair, refused_as_unknown, text
from test_protocol_2026 import meta
from test_protocol_2026 import post as post_2026

CHATTY = Path(__file__).parent / "chatty_upstream.py"
TOKENS = {"alice": "alice-token-41-8f3c2e1d9a", "bob": "bob-token-41-5b7e0c4a1f6d"}
# bob may use nothing of the server: the rule names no kind, so it is every kind.
BOB_DENIED = {"default": "allow", "rules": [{"name": "bob uses nothing", "effect": "deny", "when": "principal.name == 'bob'"}]}


class Svc:
    def __init__(self, base, metrics_base, folder):
        self.base, self.metrics_base, self.folder = base, metrics_base, folder

    def samples(self) -> dict:
        from prometheus_client.parser import text_string_to_metric_families

        body = urllib.request.urlopen(self.metrics_base + "/metrics", timeout=10).read().decode()
        return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in text_string_to_metric_families(body) for s in f.samples}

    def audit_lines(self) -> list[dict]:
        path = self.folder / "audit.jsonl"
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def start(tmp_path, policy=None, timeout_ms=None, people=tuple(TOKENS)):
    """The service in front of one chatty stdio server, with a token for each of `people`."""
    config = {"audit": {"file": str(tmp_path / "audit.jsonl")}, "upstream": {}, "server": {"sseKeepaliveSecs": 1}}
    if policy:
        config["policy"] = policy
    if timeout_ms:
        config["upstream"]["requestTimeoutMs"] = timeout_ms
    (tmp_path / "config.json").write_text(json.dumps(config))
    metrics_port = free_port()
    tokens = [a for p in people for a in ("--auth-token", f"{p}:{TOKENS[p]}")]
    argv = ["--upstream", f"{sys.executable} {CHATTY}", "--config", str(tmp_path / "config.json"),
            "--metrics-listen", f"127.0.0.1:{metrics_port}", *tokens]
    return proxy_http(argv, name=f"proxy-closed-{tmp_path.name}"), f"http://127.0.0.1:{metrics_port}"


@pytest.fixture
def svc(tmp_path):
    ctx, metrics_base = start(tmp_path, policy=BOB_DENIED)
    with ctx as (base, _):
        yield Svc(base, metrics_base, tmp_path)


@pytest.fixture
def people():
    yield from pair()


def refused(svc: Svc, reason: str) -> float:
    return metric(svc.samples(), "mcp_gen_ui_server_requests_refused_total", method="sampling/createMessage", reason=reason)


def kept_back(svc: Svc, kind: str, reason: str) -> float:
    return metric(svc.samples(), "mcp_gen_ui_kept_back_total", kind=kind, reason=reason)


def later_answers(s: Session) -> list:
    return s.call("later_answers")["result"]["structuredContent"]["answers"]


def cancel(s: Session, rid) -> None:
    status, _, body = request(s.base + "/mcp", "POST", {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                                         "params": {"requestId": rid, "reason": "changed my mind"}}, headers=s.headers())
    assert status == 202, (status, body)


# --- 1: methods the service does not know ------------------------------------------------------------


def test_a_method_the_service_does_not_know_is_a_use_of_the_server_under_the_rules_and_in_the_trail(svc, people):
    alice, bob = people
    a, b = Session(svc, alice, "A"), Session(svc, bob, "B")
    assert text(a.call("log", text=f"{alice.tag} my diary")) == "logged"
    mine = a.rpc("x-admin/reset", {})
    assert mine.get("result", {}).get("last") == f"{alice.tag} my diary", f"alice may use the server: it answers her {mine}"
    for method in ("x-admin/reset", "x-admin/dump"):
        answer = b.rpc(method, {})
        assert answer.get("error", {}).get("code") == -32003, f"bob may use nothing of the server, yet {method} got {answer}"
        assert method in answer["error"]["message"], answer
    # Tasks are the service's to answer now (issue 50): bob has none, and the server's own
    # list of everyone's is never his.
    assert b.rpc("tasks/list", {})["result"] == {"tasks": []}
    assert b.rpc("tasks/result", {"taskId": "task-1"})["error"]["code"] == -32602
    # The same as a 2026 stateless request.
    status, _, body = post_2026(svc.base, "x-admin/reset", {}, rid=9, headers={"Authorization": f"Bearer {bob.token}"}, with_meta=meta(ui=False))
    got = body if isinstance(body, dict) else next(m for m in body if m.get("id") == 9)
    bob.hear("stateless x-admin/reset", json.dumps(body))
    assert got.get("error", {}).get("code") == -32003, (status, body)
    # Every one of them is in the trail, with person, server and method.
    def lines():
        out = svc.audit_lines()
        denied = [(x["principal"], x.get("tool"), x.get("kind"), x.get("server")) for x in out if x["event"] == "denied"]
        used = [(x["principal"], x.get("tool"), x.get("server"), x["outcome"]) for x in out if x["event"] == "method"]
        tasks = [(x["principal"], x.get("detail"), x["outcome"]) for x in out if x["event"] == "task"]
        return denied, used, tasks
    want_denied = [("bob", m, "methods", "default") for m in ("x-admin/reset", "x-admin/dump", "x-admin/reset")]
    wait_for(lambda: sorted(lines()[0]) == sorted(want_denied), 5, f"bob's refused methods in the trail: {lines()[0]}")
    assert lines()[1] == [("alice", "x-admin/reset", "default", "ok")], lines()[1]
    assert sorted(lines()[2]) == [("bob", "tasks/list", "ok"), ("bob", "tasks/result", "refused")], lines()[2]
    finish(alice, bob)


def test_a_hosts_notification_reaches_only_servers_its_person_may_use(svc, people):
    alice, bob = people
    a, b = Session(svc, alice, "A"), Session(svc, bob, "B")
    for s in (a, b):
        status, _, _ = request(s.base + "/mcp", "POST", {"jsonrpc": "2.0", "method": "notifications/x-host/said", "params": {}},
                               headers=s.headers())
        assert status == 202
    wait_for(lambda: {(x["principal"], x["outcome"]) for x in svc.audit_lines() if x["event"] == "notification"}
             == {("alice", "sent"), ("bob", "denied")}, 5, "each host's notification in the trail, bob's sent nowhere")
    # The server itself heard alice's, once, and never bob's.
    said = lambda: [m for m in a.call("heard")["result"]["structuredContent"]["methods"] if m == "notifications/x-host/said"]
    assert wait_for(said, 5, "alice's notification at the server") == ["notifications/x-host/said"]
    finish(alice, bob)


# --- 2: a server's request outlives the call it belonged to ------------------------------------------------


@pytest.mark.parametrize("how", ["cancelled", "timed out", "session deleted"])
def test_a_server_request_after_its_call_ended_never_reaches_the_only_other_caller(tmp_path, people, how):
    alice, bob = people
    ctx, metrics_base = start(tmp_path, timeout_ms=1200 if how == "timed out" else None)
    with ctx as (base, _):
        svc = Svc(base, metrics_base, tmp_path)
        a, b = Session(svc, alice, "A", caps=ALL_CAPS), Session(svc, bob, "B", caps=ALL_CAPS)
        before = refused(svc, "owner_unknown")
        with ThreadPoolExecutor(2) as pool:
            # Her call: the server works 1.4 s, then asks her model (it never notices her call
            # ended: at 0.3 s, or at its 1.2 s timeout).
            asking = pool.submit(a.call, "ask", rid="alice-ask", timeout=6, text=f"{alice.tag} summarise my medical file", delay_ms=1400)
            time.sleep(0.3)
            if how == "cancelled":
                cancel(a, "alice-ask")
            elif how == "session deleted":
                a.stop()
            # Bob's call (1.0 s to 2.0 s) is then the only one in flight on the server when it asks.
            time.sleep(0.7)
            held = pool.submit(b.call, "hold", ms=1000)
            assert text(held.result(30)) == "held"
            try:
                asking.result(10)
            except (AssertionError, OSError):
                pass  # her call was cancelled, timed out or her session went: no answer is owed to her
        wait_for(lambda: refused(svc, "owner_unknown") >= before + 1, 5, "the server's request refused: whose it was cannot be known")
        assert not bob.asked, f"alice's server request went to bob: {bob.asked}"
        finish(alice, bob)


# --- 3, 4: notifications and log lines naming no call (issue 60) ----------------------------------------


@pytest.fixture
def solo(tmp_path):
    """The service for one person (alice's token only): whatever the server says is hers."""
    ctx, metrics_base = start(tmp_path, people=("alice",))
    with ctx as (base, _):
        yield Svc(base, metrics_base, tmp_path)


def test_on_a_service_for_one_person_what_the_server_says_is_hers_in_a_call_or_not(solo, people):
    alice, bob = people
    status, _, _ = request(solo.base + "/mcp", "POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                           headers={"Authorization": f"Bearer {bob.token}"})
    assert status == 401, "bob has no token here"
    a = Session(solo, alice, "A", caps={"tasks": {}, **ALL_CAPS}, level="debug")  # a task's status is only for hosts that speak tasks
    # During her call: notifications of kinds the service does not know too. A status of a task
    # the service never made is no one's, even here (it names a task, not her).
    unknown_task = kept_back(solo, "notification", "unknown_task")
    assert text(a.call("notify", text=f"{alice.tag} status of my tax return")) == "notified"
    for method in ("notifications/elicitation/complete", "notifications/x-chatty/said"):
        a.wait(lambda m: m.get("method") == method and alice.tag in json.dumps(m), f"{method} of her call")
    # Held a few seconds for an answer that might make the task, then no one's.
    wait_for(lambda: kept_back(solo, "notification", "unknown_task") >= unknown_task + 1, 10, "the unknown task's status kept back")
    assert not a.got(lambda m: m.get("method") == "notifications/tasks/status"), "a status of a task she does not have"
    # Long after every call ended: still hers, with no call to carry it.
    assert text(a.call("notify", text=f"{alice.tag} much later", after_ms=1500)) == "notified"
    a.wait(lambda m: m.get("method") == "notifications/x-chatty/said" and f"{alice.tag} much later" in json.dumps(m), "a later notification")
    assert text(a.call("log", text=f"{alice.tag} a late line", after_ms=1500)) == "logged"
    a.wait(lambda m: m.get("method") == "notifications/message" and f"{alice.tag} a late line" in json.dumps(m), "a later log line")
    # A request the server raises when no call is in flight goes to her idle session, once.
    # Waited for without calling (a poll by call would be a call in flight to carry it).
    assert text(a.call("ask_later", text=f"{alice.tag} when idle", delay_ms=1500)) == "will ask"
    wait_for(lambda: [r for _, r in a.asked if r["method"] == "sampling/createMessage"], 10, "asked with no call of hers in flight")
    got = wait_for(lambda: later_answers(a), 10, "the later ask answered")
    assert got[-1]["result"]["content"]["text"] == f"{alice.tag} answers [{alice.tag} when idle]", got
    assert [r["method"] for _, r in a.asked].count("sampling/createMessage") == 1, a.asked
    # A 2026 request that asks for logs gets its call's line, and its call's line only.
    s = Stateless(solo, alice, "S-A")
    assert text(s.call("log", log_level="debug", text=f"{alice.tag} a line for my request")) == "logged"
    lines = s.logs(alice.tag)
    assert lines and lines[0]["params"]["data"].startswith(f"{alice.tag} a line for my request"), s.got(lambda m: True)
    finish(alice, bob)


def test_with_several_people_what_a_shared_stdio_server_says_naming_no_call_goes_to_no_one(svc, people):
    """BOB_DENIED: bob may use nothing, yet he is connected, asked for every log line and pings
    all the while; alice calls alone. Whose the server's words are cannot be known on its pipe,
    so neither hears them (the review found bob reading hers, or silencing hers by pinging)."""
    alice, bob = people
    a = Session(svc, alice, "A", caps={"tasks": {}, **ALL_CAPS}, level="debug")
    b = Session(svc, bob, "B", caps={"tasks": {}, **ALL_CAPS}, level="debug")
    s = Stateless(svc, alice, "S-A")
    assert a.call("capabilities")["result"]["structuredContent"]["declared"] == {}, "not offered sampling, elicitation or roots"
    before = {k: kept_back(svc, k, "owner_unknown") for k in ("notification", "log")}
    before_refused = refused(svc, "owner_unknown")
    stop = threading.Event()
    pinger = threading.Thread(target=lambda: [b.rpc("ping", {}) for _ in iter(lambda: stop.wait(0.2), True)], daemon=True)
    pinger.start()
    try:
        assert text(a.call("notify", text=f"{alice.tag} status of my tax return")) == "notified"
        assert text(a.call("log", text=f"{alice.tag} opened salary.xlsx")) == "logged"
        assert text(a.call("log", text=f"{alice.tag} later", after_ms=300)) == "logged"
        assert text(s.call("log", log_level="debug", text=f"{alice.tag} a line for my request")) == "logged"
        asked = a.call("ask", text=f"{alice.tag} summarise my medical file")
    finally:
        stop.set()
        pinger.join(5)
    assert refused_as_unknown(asked), asked
    # The status names a task the service never made: kept back as that; the other two as no one's.
    wait_for(lambda: kept_back(svc, "notification", "owner_unknown") >= before["notification"] + 2, 5, "the two notifications kept back")
    wait_for(lambda: kept_back(svc, "notification", "unknown_task") >= 1, 10, "the unknown task's status kept back, once no answer made it")
    wait_for(lambda: kept_back(svc, "log", "owner_unknown") >= before["log"] + 3, 5, "the three log lines kept back")
    wait_for(lambda: refused(svc, "owner_unknown") >= before_refused + 1, 5, "the request refused")
    assert not a.got(lambda m: "method" in m and m.get("method") != "sampling/createMessage"), a.got(lambda m: True)
    assert not a.asked and not b.asked, (a.asked, b.asked)
    assert not s.logs(), s.got(lambda m: True)
    finish(alice, bob)


def test_a_request_raised_after_every_call_ended_goes_to_no_one_with_several_people(svc, people):
    alice, bob = people
    a = Session(svc, alice, "A", caps=ALL_CAPS)
    b = Session(svc, bob, "B", caps=ALL_CAPS)  # connected, able to answer, calling nothing
    before = refused(svc, "owner_unknown")
    assert text(a.call("ask_later", text=f"{alice.tag} soon", delay_ms=300)) == "will ask"
    wait_for(lambda: refused(svc, "owner_unknown") >= before + 1, 10, "refused: owner_unknown")
    got = wait_for(lambda: later_answers(a), 5, "its answer")
    assert "error" in got[-1], got
    assert not a.asked and not b.asked and not bob.asked, f"someone was asked: {a.asked} {bob.asked}"
    finish(alice, bob)


# --- issue 60: a method that looks like a known one, and an answer that is two answers --------------------


def test_a_method_that_looks_like_a_known_one_is_refused_not_passed_on(svc, people):
    alice, bob = people
    a, b = Session(svc, alice, "A"), Session(svc, bob, "B")
    for method in ("Tools/Call", "tools/call ", "TOOLS/LIST", " tasks/get"):
        for who in (a, b):
            answer = who.rpc(method, {"name": "whoami", "arguments": {}})
            assert answer.get("error", {}).get("code") == -32600, (method, answer)
            assert "tools/call" in answer["error"]["message"] or "/" in answer["error"]["message"], answer
    # Never in front of the server as a method of its own: nothing of the kind was used.
    time.sleep(0.3)
    assert not [x for x in svc.audit_lines() if x["event"] == "method"], svc.audit_lines()
    finish(alice, bob)


def test_an_answer_with_both_a_result_and_an_error_is_an_error(svc, people):
    alice, bob = people
    a = Session(svc, alice, "A")
    answer = a.call("both")
    assert "result" not in answer and answer.get("error", {}).get("message"), answer
    assert text(a.call("log", text="still working")) == "logged", "the server's link is still up"
    finish(alice, bob)


def test_a_tool_error_kept_as_read_counts_and_is_recorded_as_the_tree_would_be(svc, people):
    """One stdio server with bare names, a host without the UI extension: results go out as
    the server wrote them (the as-read path). A tool's own failure (`isError`) is still an
    answered request in `requests_total` and a `tool_error` in the trail; a plain one `ok`."""
    alice, bob = people
    a = Session(svc, alice, "A")
    samples = svc.samples()
    before = metric(samples, "mcp_gen_ui_requests_total", method="tools/call", outcome="ok")
    errors = metric(samples, "mcp_gen_ui_requests_total", method="tools/call", outcome="error")
    failed = a.call("ask", text=f"{alice.tag} asked of a pipe")  # refused: an isError result
    assert failed["result"].get("isError") is True, failed
    assert text(a.call("log", text="fine")) == "logged"
    samples = svc.samples()
    assert metric(samples, "mcp_gen_ui_requests_total", method="tools/call", outcome="ok") == before + 2
    assert metric(samples, "mcp_gen_ui_requests_total", method="tools/call", outcome="error") == errors
    calls = lambda: [(x["tool"], x["outcome"]) for x in svc.audit_lines() if x["event"] == "tool_call" and x["principal"] == "alice"]
    wait_for(lambda: calls() == [("ask", "tool_error"), ("log", "ok")], 5, f"both calls in the trail as they ended: {calls()}")
    finish(alice, bob)


# --- issue 54, item 4: a page read for a tool the person may not see ---------------------------------------


def test_the_page_of_a_tool_hidden_from_a_person_reads_exactly_as_an_unknown_page(svc, people):
    alice, bob = people
    ui = {"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}}
    for label, caps in (("plain", {}), ("ui", ui)):
        b = Session(svc, bob, f"B-{label}", caps=caps)
        hidden = b.rpc("resources/read", {"uri": "ui://whoami"})
        unknown = b.rpc("resources/read", {"uri": "ui://no_such_tool"})
        assert "error" in hidden and "error" in unknown, (hidden, unknown)
        same = json.dumps(hidden["error"]).replace("whoami", "X") == json.dumps(unknown["error"]).replace("no_such_tool", "X")
        assert same, f"{label}: the hidden tool's page answers otherwise than an unknown one: {hidden} / {unknown}"
    a = Session(svc, alice, "A", caps=ui)
    assert "result" in a.rpc("resources/read", {"uri": "ui://whoami"}), "alice sees the tool: its page is read"
    finish(alice, bob)

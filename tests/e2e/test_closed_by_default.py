"""Issue 51: what the service does not know never crosses people. One shared stdio server
(chatty_upstream.py) passed through as it is, alice and bob side by side with canaries (the
people and channels of test_isolation.py): methods the service has never heard of are a use of
the server under the rules and in the trail; a server's request or log line that names no call
goes to a person only when every call that could have caused it (in flight, or ended within
`upstream.callerWindowMs`) is theirs; notifications of kinds the service does not know reach
only such an owner, else no one. Each test first checks that what must arrive did."""

import json
import os
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import free_port, metric, proxy_http, wait_for
from test_auth import request
from test_isolation import ALL_CAPS, Session, Stateless, finish, pair, text
from test_protocol_2026 import meta
from test_protocol_2026 import post as post_2026

CHATTY = Path(__file__).parent / "chatty_upstream.py"
TOKENS = {"alice": "alice-token-41-8f3c2e1d9a", "bob": "bob-token-41-5b7e0c4a1f6d"}
WINDOW_MS = 1500
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


def start(tmp_path, policy=None, timeout_ms=None):
    config = {"audit": {"file": str(tmp_path / "audit.jsonl")}, "upstream": {"callerWindowMs": WINDOW_MS}, "server": {"sseKeepaliveSecs": 1}}
    if policy:
        config["policy"] = policy
    if timeout_ms:
        config["upstream"]["requestTimeoutMs"] = timeout_ms
    (tmp_path / "config.json").write_text(json.dumps(config))
    metrics_port = free_port()
    tokens = [a for p, t in TOKENS.items() for a in ("--auth-token", f"{p}:{t}")]
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


# --- 3, 4: notifications and log lines naming no call ---------------------------------------------------


def test_notifications_the_service_does_not_know_reach_only_their_callers(tmp_path, people):
    alice, bob = people
    ctx, metrics_base = start(tmp_path)  # bob may use the server too: only ownership keeps them apart
    with ctx as (base, _):
        svc = Svc(base, metrics_base, tmp_path)
        try:
            b = Session(svc, bob, "B", level="debug")
            time.sleep(WINDOW_MS / 1000 + 0.2)  # his setLevel is a request too: past it, hers is the only call
            a = Session(svc, alice, "A", caps={"tasks": {}})  # a task's status is only for hosts that speak tasks
            assert text(a.call("notify", text=f"{alice.tag} status of my tax return")) == "notified"
            for method in ("notifications/tasks/status", "notifications/elicitation/complete", "notifications/x-chatty/said"):
                a.wait(lambda m: m.get("method") == method and alice.tag in json.dumps(m), f"{method} of her call")
            assert not b.got(lambda m: "method" in m), f"bob's stream heard {b.got(lambda m: True)}"
        finally:
            finish(alice, bob)


def test_notifications_and_log_lines_with_several_callers_are_kept_back(tmp_path, people):
    alice, bob = people
    ctx, metrics_base = start(tmp_path)
    with ctx as (base, _):
        svc = Svc(base, metrics_base, tmp_path)
        a, b = Session(svc, alice, "A"), Session(svc, bob, "B", level="debug")
        b_quiet = Session(svc, bob, "B-quiet")
        before = (kept_back(svc, "notification", "owner_unknown"), kept_back(svc, "log", "owner_unknown"))
        # During alice's call, with bob's in flight too: nobody can tell whose they are.
        with ThreadPoolExecutor(2) as pool:
            held = pool.submit(b_quiet.call, "hold", ms=2000)
            time.sleep(0.3)
            assert text(a.call("notify", text=f"{alice.tag} status of my tax return")) == "notified"
            # Just after her answer, while bob's call is the only one in flight (issue 51, item 4).
            assert text(a.call("log", text=f"{alice.tag} opened salary.xlsx", after_ms=200)) == "logged"
            assert text(held.result(30)) == "held"
        wait_for(lambda: kept_back(svc, "notification", "owner_unknown") >= before[0] + 3, 5, "the three notifications kept back")
        wait_for(lambda: kept_back(svc, "log", "owner_unknown") >= before[1] + 1, 5, "the log line kept back")
        # Alone, a line that no call could have caused goes to whoever asked for logs.
        time.sleep(WINDOW_MS / 1000 + 0.2)
        fence = f"FENCE-{os.getpid()}-{time.monotonic_ns()}"
        assert text(b_quiet.call("log", text=fence, after_ms=WINDOW_MS + 300)) == "logged"
        b.wait(lambda m: m.get("method") == "notifications/message" and fence in json.dumps(m), "a line of no call, to bob who asked")
        finish(alice, bob)


# --- issue 52, item 1: a server request raised while no call is in flight -----------------------------------


def test_a_request_raised_after_every_call_ended_goes_to_its_one_caller_or_to_no_one(tmp_path, people):
    alice, bob = people
    ctx, metrics_base = start(tmp_path)
    with ctx as (base, _):
        svc = Svc(base, metrics_base, tmp_path)
        a = Session(svc, alice, "A", caps=ALL_CAPS)
        b = Session(svc, bob, "B", caps=ALL_CAPS)  # connected, able to answer, calling nothing
        # Within the window her call is the only one that could have caused it: hers.
        assert text(a.call("ask_later", text=f"{alice.tag} soon", delay_ms=300)) == "will ask"
        got = wait_for(lambda: later_answers(a), 10, "the later ask answered")
        assert got[-1]["result"]["content"]["text"] == f"{alice.tag} answers [{alice.tag} soon]", got
        # Past the window nothing could have caused it; with bob connected it is no one's.
        before = refused(svc, "no_host")
        assert text(a.call("ask_later", text=f"{alice.tag} much later", delay_ms=WINDOW_MS + 800)) == "will ask"
        wait_for(lambda: refused(svc, "no_host") >= before + 1, 10, "refused: no_host")
        assert len(wait_for(lambda: (lambda x: x if len(x) == 2 else None)(later_answers(a)), 5, "its answer")) == 2
        assert "error" in later_answers(a)[-1], later_answers(a)
        assert not b.asked and not bob.asked, f"bob was asked: {bob.asked}"
        # With alice alone connected, it is hers.
        b.stop()
        assert text(a.call("ask_later", text=f"{alice.tag} alone", delay_ms=WINDOW_MS + 800)) == "will ask"
        got = wait_for(lambda: (lambda x: x if len(x) == 3 else None)(later_answers(a)), 10, "the third later ask answered")
        assert got[-1].get("result", {}).get("content", {}).get("text") == f"{alice.tag} answers [{alice.tag} alone]", got
        finish(alice, bob)


# --- issue 52, item 2: 2026 stateless requests get their log lines ------------------------------------------


def test_a_stateless_request_that_asks_for_logs_gets_its_calls_line(svc, people):
    alice, bob = people
    s = Stateless(svc, alice, "S-A")
    answer = s.call("log", log_level="debug", text=f"{alice.tag} a line for my request")
    assert text(answer) == "logged"
    lines = s.logs(alice.tag)
    assert lines and lines[0]["params"]["data"].startswith(f"{alice.tag} a line for my request"), s.got(lambda m: True)
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

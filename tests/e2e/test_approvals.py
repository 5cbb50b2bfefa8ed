"""Issue 62, approvals: a call an `approve` rule matches is held, not forwarded, until someone
the rule names approves that exact call. With the real server-filesystem (npm): bob's
`write_file` waits for an admin (carol); carol lists it with `_ui_approvals` and approves it
with `_ui_approve`, and the file is written with exactly bob's arguments; another argument is
another approval; a decline and an expiry answer bob clearly and write nothing; bob cannot
approve his own call, alice (no admin) sees nothing to decide and cannot decide it; a call
whose host gave up is approved all the same and the same call made again passes, once. The
caller's own confirmation goes to their host as `elicitation/create` (the Python SDK answering),
accepted and declined. Two replicas sharing a real redis-server: a call held on one is
approved on the other."""

import contextlib
import json
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import anyio
import pytest
from mcp import types

from conftest import METRICS_TOKEN, NODE, NODE_MODULES, UI_EXT, metric, proxy_http, wait_for
from mcpclient import session
from replica_peers import Redis
from test_isolation import Person, Session, finish
from test_teams import scrape_with
from test_tool_facts import Svc

FILESYSTEM = NODE_MODULES / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
TOKENS = {"alice": "alice-token-41-8f3c2e1d9a", "bob": "bob-token-41-5b7e0c4a1f6d", "carol": "carol-token-62-4e8a1c9d3b7f"}
RULE = "writes need an admin"
UI = {"extensions": UI_EXT}


class Carol(Person):
    """The third person (test_isolation's Person knows alice and bob)."""

    def __init__(self):
        self.name, self.token, self.secret = "carol", TOKENS["carol"], "tok-CAROL-canary-62"
        self.tag = f"CAROL-CANARY-{uuid.uuid4().hex[:12]}"
        self.marker = "carol-canary"
        self.lock = threading.Lock()
        self.heard, self.asked, self.problems, self.channels = [], [], [], []


@contextlib.contextmanager
def service(folder, approvers=("admins",), expires=60, extra=None, name="proxy-approvals", files=None, before=()):
    files = files or folder / "files"
    files.mkdir(exist_ok=True)
    servers = {"fs": {"command": NODE, "args": [str(FILESYSTEM), str(files)]}}
    (folder / "servers.json").write_text(json.dumps({"mcpServers": servers}))
    rule = {"name": RULE, "tools": ["fs__write_file"], "effect": "approve", "approvers": list(approvers), "expires": expires}
    cfg = {"policy": {"rules": [*before, rule]}, "audit": {"file": str(folder / "audit.jsonl")}, "server": {"auth": {"admins": ["carol"]}}, **(extra or {})}
    (folder / "config.json").write_text(json.dumps(cfg))
    tokens = [a for p, t in TOKENS.items() for a in ("--auth-token", f"{p}:{t}")]
    argv = ["--servers-file", str(folder / "servers.json"), "--config", str(folder / "config.json"), *tokens]
    with proxy_http(argv, name=name) as (base, _):
        yield Svc(base, folder, files)


@contextlib.contextmanager
def three():
    alice, bob, carol = Person("alice"), Person("bob"), Carol()
    try:
        yield alice, bob, carol
    finally:
        for p in (alice, bob, carol):
            p.stop()


def result_text(answer: dict) -> str:
    return "".join(c.get("text", "") for c in (answer.get("result") or {}).get("content", []))


def pending(s: Session) -> list[dict]:
    return s.call("_ui_approvals")["result"]["structuredContent"]["pending"]


def one_pending(s: Session, what: str) -> dict:
    return wait_for(lambda: (lambda p: p[0] if len(p) == 1 else None)(pending(s)), 15, what)


def write(s: Session, path, content, rid=None, timeout=60.0) -> dict:
    params = {"name": "fs__write_file", "arguments": {"path": str(path), "content": content}, "_meta": {"progressToken": f"p-{uuid.uuid4().hex[:6]}"}}
    return s.rpc("tools/call", params, timeout=timeout, rid=rid)


def test_an_admin_approves_the_exact_call_and_no_one_else_can(tmp_path):
    with service(tmp_path) as svc, three() as (alice, bob, carol), ThreadPoolExecutor(2) as pool:
        a, b, c = Session(svc, alice, "A", caps=UI), Session(svc, bob, "B", caps=UI), Session(svc, carol, "C", caps=UI)
        assert "_ui_approvals" in {t["name"] for t in c.rpc("tools/list", {})["result"]["tools"]}
        assert c.rpc("resources/subscribe", {"uri": "ui://mcp-gen-ui/approvals"}).get("result") == {}
        page = c.rpc("resources/read", {"uri": "ui://mcp-gen-ui/approvals"})["result"]["contents"][0]
        assert page["mimeType"] == "text/html;profile=mcp-app" and "_ui_approve" in page["text"]
        target = svc.files / "plan.txt"
        held = pool.submit(write, b, target, bob.tag)
        req = one_pending(c, "bob's call waiting for carol")
        updated = lambda p: [t for w, t in p.heard if w.endswith("GET") and "notifications/resources/updated" in t and "mcp-gen-ui/approvals" in t]
        wait_for(lambda: updated(carol), 5, "carol, subscribed to the approvals page, hears it changed")
        assert not updated(bob) and not updated(alice), "only to those subscribed"
        assert (req["person"], req["tool"], req["rule"]) == ("bob", "fs__write_file", RULE), req
        assert req["arguments"] == {"path": str(target), "content": bob.tag}, "the exact call is shown"
        time.sleep(0.5)
        assert not target.exists() and not held.done(), "held, not forwarded"
        # bob cannot approve his own; alice is no approver and sees nothing to decide.
        own = b.call("_ui_approve", id=req["id"], decision="approve")["result"]
        assert own.get("isError") and "not yours" in own["content"][0]["text"], own
        assert b.call("_ui_approvals")["result"]["structuredContent"]["yours"][0]["id"] == req["id"]
        assert pending(a) == []
        not_hers = a.call("_ui_approve", id=req["id"], decision="approve")["result"]
        assert not_hers.get("isError") and "only an admin" in not_hers["content"][0]["text"], not_hers
        assert not held.done()
        # carol approves: the call is made, exactly as asked.
        ok = c.call("_ui_approve", id=req["id"], decision="approve")["result"]
        assert not ok.get("isError") and ok["structuredContent"]["decided"]["state"] == "approved", ok
        answer = held.result(timeout=30)
        assert "error" not in answer and not answer["result"].get("isError"), answer
        assert target.read_text() == bob.tag
        assert pending(c) == []
        # Another argument is another call: held again; carol declines it.
        again = pool.submit(write, b, target, "overwritten " + bob.tag)
        req2 = one_pending(c, "bob's second call")
        assert req2["id"] != req["id"]
        c.call("_ui_approve", id=req2["id"], decision="decline")
        refused = again.result(timeout=30)["result"]
        assert refused.get("isError") and "carol declined" in result_text({"result": refused}), refused
        assert target.read_text() == bob.tag, "a declined call writes nothing"
        # The trail and the metrics.
        events = lambda: [(x["event"], x["principal"]) for x in svc.audit_lines() if x["event"] in ("approval_requested", "approved", "declined")]
        wait_for(lambda: events() == [("approval_requested", "bob"), ("approved", "carol"), ("approval_requested", "bob"), ("declined", "carol")], 5,
                 f"every step in the trail: {events()}")
        samples = scrape_with(svc.base, METRICS_TOKEN)
        for outcome, n in (("requested", 2), ("approved", 1), ("declined", 1)):
            assert metric(samples, "mcp_gen_ui_approvals_total", rule=RULE, outcome=outcome) == n, outcome
        assert not any(alice.marker in t.lower() for _, t in carol.heard) and not any(bob.marker in t.lower() for _, t in alice.heard)
        finish(alice, bob, grace=0)


def test_an_expired_request_and_a_host_that_gave_up(tmp_path):
    with service(tmp_path, expires=2) as svc, three() as (alice, bob, carol), ThreadPoolExecutor(2) as pool:
        b, c = Session(svc, bob, "B", caps=UI), Session(svc, carol, "C", caps=UI)
        target = svc.files / "late.txt"
        expired = write(b, target, bob.tag)["result"]
        assert expired.get("isError") and "in time" in result_text({"result": expired}), expired
        assert not target.exists()
        wait_for(lambda: any(x["event"] == "expired" for x in svc.audit_lines()), 5, "the expiry in the trail")
    with service(tmp_path, expires=60, name="proxy-approvals-retry") as svc, three() as (alice, bob, carol), ThreadPoolExecutor(2) as pool:
        b, c = Session(svc, bob, "B", caps=UI), Session(svc, carol, "C", caps=UI)
        target = svc.files / "retry.txt"
        rid = 9001
        pool.submit(write, b, target, bob.tag, rid, 5.0)
        req = one_pending(c, "bob's call")
        # bob's host gives up on the call; carol approves it afterwards.
        b._post({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid, "reason": "cannot wait"}})
        c.call("_ui_approve", id=req["id"], decision="approve")
        time.sleep(0.5)
        assert not target.exists(), "the call its host gave up on is not made"
        answer = write(b, target, bob.tag, timeout=10)
        assert not answer["result"].get("isError") and target.read_text() == bob.tag, answer
        # Single use: the same call once more waits for a new approval.
        third = pool.submit(write, b, target, bob.tag)
        assert one_pending(c, "a third call held again")["id"] != req["id"]
        assert not third.done()
        finish(alice, bob, grace=0)


def test_a_host_that_cannot_ask_is_told_how_to_confirm_and_an_approver_must_see_the_tool(tmp_path):
    with service(tmp_path, approvers=("caller",)) as svc, three() as (alice, bob, carol):
        # bob's host cannot ask him (no elicitation): he confirms on the approvals page.
        b, a = Session(svc, bob, "B", caps=UI), Session(svc, alice, "A", caps=UI)
        listed = {t["name"]: t for t in b.rpc("tools/list", {})["result"]["tools"]}
        assert listed["_ui_approve"]["_meta"]["ui"]["visibility"] == ["app"], "a decision is a person's act, never the model's"
        target = svc.files / "mine.txt"
        told = write(b, target, bob.tag)["result"]
        said = result_text({"result": told})
        assert told.get("isError") and "approvals page" in said and "cannot ask you" in said, said
        rid = said.split("request ")[1].split(")")[0]
        assert not target.exists()
        # Nobody else confirms bob's call; bob does, and the same call then passes once.
        assert a.call("_ui_approve", id=rid, decision="approve")["result"].get("isError")
        assert not b.call("_ui_approve", id=rid, decision="approve")["result"].get("isError")
        assert not write(b, target, bob.tag)["result"].get("isError") and target.read_text() == bob.tag
        assert write(b, target, bob.tag)["result"].get("isError"), "used once: asked again"
        finish(alice, bob, grace=0)
    hidden = {"name": "carol may not write", "tools": ["fs__write_file"], "effect": "deny", "when": "principal.name == 'carol'"}
    with service(tmp_path, before=[hidden], name="proxy-approvals-hidden") as svc, three() as (alice, bob, carol), ThreadPoolExecutor(1) as pool:
        b, c = Session(svc, bob, "B", caps=UI), Session(svc, carol, "C", caps=UI)
        held = pool.submit(write, b, svc.files / "hidden.txt", bob.tag, None, 6.0)
        mine = wait_for(lambda: (lambda y: y[0] if y else None)(b.call("_ui_approvals")["result"]["structuredContent"]["yours"]), 10, "held")
        assert pending(c) == [], "carol, an admin who may not use the tool, is shown nothing to decide"
        refused = c.call("_ui_approve", id=mine["id"], decision="approve")["result"]
        assert refused.get("isError") and "may not use" in refused["content"][0]["text"], refused
        with pytest.raises(AssertionError):
            held.result(timeout=30)  # still held when bob's host gives up
        assert not (svc.files / "hidden.txt").exists()
        finish(alice, bob, grace=0)


@pytest.mark.parametrize("accept", [True, False])
def test_the_caller_confirms_their_own_call_in_their_host(tmp_path, accept):
    files = tmp_path / "files"
    files.mkdir()
    servers = {"fs": {"command": NODE, "args": [str(FILESYSTEM), str(files)]}}
    (tmp_path / "servers.json").write_text(json.dumps({"mcpServers": servers}))
    rule = {"name": "confirm writes", "tools": ["fs__write_file"], "effect": "approve", "approvers": ["caller"]}
    (tmp_path / "config.json").write_text(json.dumps({"policy": {"rules": [rule]}}))
    argv = ["--servers-file", str(tmp_path / "servers.json"), "--config", str(tmp_path / "config.json")]
    asked = {"a": [], "b": []}

    def answering(who):
        async def on_elicit(ctx, params):
            asked[who].append(params.message)
            return types.ElicitResult(action="accept", content={"approve": accept})
        return on_elicit

    target = files / "confirmed.txt"

    async def scenario(base):
        async with session("mcp", base, elicitation_callback=answering("a")) as a, session("mcp", base, elicitation_callback=answering("b")) as b:
            await b.list_tools()
            res = await a.call_tool("fs__write_file", {"path": str(target), "content": "CONFIRMED-CANARY"})
            return res

    with proxy_http(argv, name="proxy-approvals-caller") as (base, _):
        res = anyio.run(scenario, base)
    assert len(asked["a"]) == 1 and asked["b"] == [], asked
    assert "fs__write_file" in asked["a"][0] and "CONFIRMED-CANARY" in asked["a"][0], "the confirmation shows the tool and its arguments"
    if accept:
        assert not res.is_error and target.read_text() == "CONFIRMED-CANARY", res
    else:
        assert res.is_error and "declined" in res.content[0].text and not target.exists(), res


def test_a_call_held_on_one_replica_is_approved_on_the_other(tmp_path):
    redis = Redis()
    try:
        extra = {"cache": {"type": "redis", "redisUrl": redis.url}}
        files = tmp_path / "files"
        files.mkdir()
        for r in ("r1", "r2"):
            (tmp_path / r).mkdir()
        with service(tmp_path / "r1", extra=extra, name="approvals-r1", files=files) as r1, \
                service(tmp_path / "r2", extra=extra, name="approvals-r2", files=files) as r2, \
                three() as (alice, bob, carol), ThreadPoolExecutor(2) as pool:
            b1, c2 = Session(r1, bob, "B1", caps=UI), Session(r2, carol, "C2", caps=UI)
            target = files / "shared.txt"
            held = pool.submit(write, b1, target, bob.tag)
            req = one_pending(c2, "bob's call, held on replica 1, listed on replica 2")
            assert not c2.call("_ui_approve", id=req["id"], decision="approve")["result"].get("isError")
            answer = held.result(timeout=30)
            assert not answer["result"].get("isError") and target.read_text() == bob.tag, answer
            finish(alice, bob, grace=0)
    finally:
        redis.stop()


def test_arguments_too_long_to_show_are_not_held(tmp_path):
    with service(tmp_path) as svc, three() as (alice, bob, carol):
        b, c = Session(svc, bob, "B", caps=UI), Session(svc, carol, "C", caps=UI)
        target = svc.files / "big.txt"
        refused = write(b, target, "x" * (70 * 1024))["result"]
        said = result_text({"result": refused})
        assert refused.get("isError") and "more than an approver can be shown" in said, said[:300]
        assert pending(c) == [] and not target.exists()
        finish(alice, bob, grace=0)

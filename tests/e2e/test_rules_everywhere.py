"""Issue 45, the rules everywhere: what the rules deny a person stays denied whatever way they ask.
Search mode's `search_tools` and `describe_tools` never show a denied tool (and `call_tool` is
refused); the `_ui_*` tools that hand over a page (`_ui_page_status` with `html`) or change it
(`_ui_regenerate`) refuse a denied tool; and each edge decides by the rules: stdio (no auth:
rules over `transport`), legacy SSE (a denied call and a denied page read), a 2026 stateless
page read, and the HTTP edge's fast path for ready pages (the page made ready and served by the
edge first, then refused by it once the rules deny it). Every test shows what is allowed works
before it shows what is denied is refused, and every wait is bounded."""

import itertools
import json
import os
import select
import signal
import subprocess
import time

from conftest import ARTIFACTS, BIN, wait_for
from test_auth import open_sse, request, token_proxy
from test_policy import ALICE, BOB, IDS, RULES, TOKENS, UI_CAPS, call, denied, init_ui, listed, rpc, sse_answers, wait_for_log
from test_protocol_2026 import post as post_2026

# --- search mode under rules -------------------------------------------------------------------

# The demo's four tools in one profile in search mode; bob may not use the weather map (nor see
# it: a rule naming tools is about their calls, pages and refinements alike).
SEARCH_RULES = {"default": "allow", "rules": [
    {"name": "no map for bob", "tools": ["get_weather_map"], "effect": "deny", "when": "principal.name == 'bob'"}]}
FIND = {"find": {"tools": ["*"], "discovery": "search"}}
MAP_QUERY = "radar picture of a city as an image"


def open_profile(base, token, path):
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": UI_CAPS, "clientInfo": {"name": "rules-everywhere", "version": "1"}}}
    code, headers, text = request(base + path, "POST", body, token=token)
    assert code == 200, (code, text)
    sid = headers["Mcp-Session-Id"]
    request(base + path, "POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, token=token, headers={"Mcp-Session-Id": sid})
    return sid


def profile_call(base, token, path, sid, tool, args):
    """tools/call on a profile's path; (the answer parsed, its raw text)."""
    body = {"jsonrpc": "2.0", "id": next(IDS), "method": "tools/call", "params": {"name": tool, "arguments": args}}
    code, _, text = request(base + path, "POST", body, token=token, headers={"Mcp-Session-Id": sid})
    assert code == 200, (code, text)
    return json.loads(text), text


def test_search_and_describe_never_show_a_tool_the_rules_deny_and_call_tool_refuses_it(tmp_path):
    config = {"policy": SEARCH_RULES, "profiles": FIND}
    with token_proxy(tmp_path, TOKENS, config=config, name="proxy-rules-search") as (base, _proc, _log):
        path = "/mcp/find"
        a, b = open_profile(base, ALICE, path), open_profile(base, BOB, path)

        # Alice may use the map: search finds it (first, it is the only radar picture), and
        # describe_tools gives its definition.
        found, _ = profile_call(base, ALICE, path, a, "search_tools", {"query": MAP_QUERY, "limit": 10})
        names = [t["name"] for t in found["result"]["structuredContent"]["tools"]]
        assert names[:1] == ["get_weather_map"], names
        one, _ = profile_call(base, ALICE, path, a, "search_tools", {"query": MAP_QUERY, "limit": 1})
        assert [t["name"] for t in one["result"]["structuredContent"]["tools"]] == ["get_weather_map"], one
        described, _ = profile_call(base, ALICE, path, a, "describe_tools", {"names": ["get_weather_map", "get_forecast"]})
        d = described["result"]["structuredContent"]
        assert {t["name"] for t in d["tools"]} == {"get_weather_map", "get_forecast"} and "unknown" not in d, d
        assert "radar" in json.dumps(d).lower(), "the map's own description is in its definition"
        via, _ = profile_call(base, ALICE, path, a, "call_tool", {"name": "get_weather_map", "arguments": {"city": "Oslo"}})
        assert "Weather map for Oslo" in json.dumps(via["result"]), via

        # Bob searches the same words: the other tools (they take a city), never the map, at any
        # limit; describe_tools calls it unknown and says nothing of it; call_tool is refused.
        found, text = profile_call(base, BOB, path, b, "search_tools", {"query": MAP_QUERY, "limit": 10})
        names = [t["name"] for t in found["result"]["structuredContent"]["tools"]]
        assert names and "get_weather_map" not in names and "radar" not in text.lower(), found
        one, text = profile_call(base, BOB, path, b, "search_tools", {"query": MAP_QUERY, "limit": 1})
        names = [t["name"] for t in one["result"]["structuredContent"]["tools"]]
        assert len(names) == 1 and names != ["get_weather_map"], "the limit counts what bob may see, after the filter"
        for query in ("weather map", "get_weather_map", "map"):
            found, text = profile_call(base, BOB, path, b, "search_tools", {"query": query, "limit": 50})
            assert "get_weather_map" not in text and "radar" not in text.lower(), (query, found)
        described, text = profile_call(base, BOB, path, b, "describe_tools", {"names": ["get_weather_map", "get_forecast"]})
        d = described["result"]["structuredContent"]
        assert [t["name"] for t in d["tools"]] == ["get_forecast"] and d["unknown"] == ["get_weather_map"], d
        assert "radar" not in text.lower(), "no part of the map's definition reaches bob"
        refused, text = profile_call(base, BOB, path, b, "call_tool", {"name": "get_weather_map", "arguments": {"city": "Oslo"}})
        assert denied(refused), refused
        assert "Weather map for" not in text
        # Bob's other calls through call_tool go through.
        ok, _ = profile_call(base, BOB, path, b, "call_tool", {"name": "get_forecast", "arguments": {"city": "Oslo", "days": 2}})
        assert "result" in ok and not ok["result"].get("isError"), ok


# --- the _ui_* tools that hand over or change a page ---------------------------------------------


def test_page_status_with_html_and_regenerate_refuse_a_tool_whose_page_the_rules_deny(tmp_path):
    """RULES: alice reads get_* (calls, pages, refinements); bob may call get_forecast, but
    neither read nor change its page. Alice is an admin: with several people only an admin
    regenerates the page everyone shares (issue 51)."""
    config = {"policy": RULES, "server": {"auth": {"admins": ["alice"]}}}
    with token_proxy(tmp_path, TOKENS, config=config, name="proxy-rules-ui-tools") as (base, _proc, _log):
        a, b = init_ui(base, ALICE), init_ui(base, BOB)

        # Alice: the page, made, then handed over by _ui_page_status; and made again.
        page = rpc(base, ALICE, a, "resources/read", {"uri": "ui://get_forecast"})
        html = page["result"]["contents"][0]["text"]
        assert html.startswith("<!doctype html>"), page
        status = call(base, ALICE, a, "_ui_page_status", toolName="get_forecast", html=True)
        s = status["result"]["structuredContent"]
        assert s["state"] in ("ready", "template") and s["html"] == html, status
        made = call(base, ALICE, a, "_ui_page_status", toolName="get_forecast", html=True, make=True)
        assert made["result"]["structuredContent"]["html"].startswith("<!doctype html>"), made
        again = call(base, ALICE, a, "_ui_regenerate", toolName="get_forecast")
        assert "result" in again and not again["result"].get("isError"), again
        assert again["result"]["structuredContent"]["toolName"] == "get_forecast", again

        # Bob may call the tool (the session works for him) ...
        assert "result" in call(base, BOB, b, "get_forecast", city="Oslo")
        # ... but its page is not handed to him, asked any way, nor made again by him.
        for args in ({"html": True}, {"html": True, "make": True}, {"html": True, "waitMs": 100}, {}):
            refused = call(base, BOB, b, "_ui_page_status", toolName="get_forecast", **args)
            assert denied(refused), (args, refused)
            assert "<html" not in json.dumps(refused).lower() and "result" not in refused, refused
        for args in ({}, {"clearRefinements": True}):
            refused = call(base, BOB, b, "_ui_regenerate", toolName="get_forecast", **args)
            assert denied(refused), (args, refused)
            assert "result" not in refused
        # A tool bob may not even call: the same.
        assert denied(call(base, BOB, b, "_ui_page_status", toolName="get_current_weather", html=True))
        assert denied(call(base, BOB, b, "_ui_regenerate", toolName="set_units"))


# --- stdio ---------------------------------------------------------------------------------------

# Without auth everyone is the anonymous principal: rules over the transport, and one outright.
STDIO_RULES = {"default": "allow", "rules": [
    {"name": "no maps on stdio", "tools": ["get_weather_map"], "effect": "deny", "when": "transport == 'stdio'"},
    {"name": "no forecast page on stdio", "tools": ["get_forecast"], "kinds": ["pages"], "effect": "deny", "when": "transport == 'stdio'"},
    {"name": "no units", "tools": ["set_units"], "effect": "deny"},
]}


class Stdio:
    """The service on stdio, spoken to in JSON-RPC lines; every read bounded (raw reads of the
    pipe, split here, so that no line waits in a buffer select cannot see)."""

    def __init__(self, args, log_name):
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.log = open(ARTIFACTS / f"{log_name}.log", "w")
        self.p = subprocess.Popen([str(BIN), "--transport", "stdio", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.log)
        self.ids = itertools.count(1)
        self.pending = b""

    def send(self, msg):
        self.p.stdin.write(json.dumps(msg).encode() + b"\n")
        self.p.stdin.flush()

    def ask(self, method, params=None, timeout=30.0):
        rid = next(self.ids)
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
        return self.answer(rid, timeout)

    def answer(self, rid, timeout):
        """The answer to `rid`; other lines (notifications) are skipped."""
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self.pending:
                line, self.pending = self.pending.split(b"\n", 1)
                if line.strip():
                    msg = json.loads(line)
                    if msg.get("id") == rid and "method" not in msg:
                        return msg
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.p.stdout], [], [], left)[0]:
                raise AssertionError(f"no answer to request {rid} within {timeout} s")
            chunk = os.read(self.p.stdout.fileno(), 1 << 20)
            if not chunk:
                raise AssertionError(f"the service closed stdout (exit {self.p.poll()})")
            self.pending += chunk

    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait(timeout=10)
        finally:
            self.log.close()


def test_the_rules_over_stdio_deny_a_call_and_a_page_read(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"policy": STDIO_RULES}))
    host = Stdio(["--demo", "--config", str(cfg)], "proxy-rules-stdio")
    try:
        init = host.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": UI_CAPS,
                                       "clientInfo": {"name": "rules-stdio", "version": "1"}})
        assert init["result"]["serverInfo"], init
        host.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

        # The list: the map is not shown, the forecast is, without its page.
        tools = wait_for(lambda: {t["name"]: t for t in host.ask("tools/list")["result"]["tools"]} or None, 30, "the demo's tools over stdio")
        assert "get_current_weather" in tools and "get_forecast" in tools, tools
        assert "ui" in tools["get_current_weather"].get("_meta", {}), "pages are on: a page the rules allow is given"
        assert "get_weather_map" not in tools and "set_units" not in tools, sorted(tools)
        assert "ui" not in tools["get_forecast"].get("_meta", {}), "the forecast's page is denied on stdio"

        # What is allowed works: calls, and a page.
        ok = host.ask("tools/call", {"name": "get_current_weather", "arguments": {"city": "Oslo"}})
        assert "result" in ok and not ok["result"].get("isError") and "Oslo" in json.dumps(ok["result"]), ok
        ok = host.ask("tools/call", {"name": "get_forecast", "arguments": {"city": "Oslo", "days": 2}})
        assert "result" in ok and not ok["result"].get("isError"), "a pages-only rule leaves the calls alone"
        page = host.ask("resources/read", {"uri": "ui://get_current_weather"})
        assert page["result"]["contents"][0]["text"].startswith("<!doctype html>"), page

        # What is denied is refused: by the transport's rule, and outright.
        refused = host.ask("tools/call", {"name": "get_weather_map", "arguments": {"city": "Oslo"}})
        assert denied(refused) and "Weather map for" not in json.dumps(refused), refused
        assert denied(host.ask("tools/call", {"name": "set_units", "arguments": {"units": "imperial"}}))
        for _ in range(2):  # ready or not
            refused = host.ask("resources/read", {"uri": "ui://get_forecast"})
            assert denied(refused) and "<html" not in json.dumps(refused).lower(), refused
        assert denied(host.ask("tools/call", {"name": "_ui_page_status", "arguments": {"toolName": "get_forecast", "html": True}}))
        # And the session is still good after the refusals.
        assert "result" in host.ask("tools/call", {"name": "get_current_weather", "arguments": {"city": "Lima"}})
    finally:
        host.close()


# --- legacy SSE ----------------------------------------------------------------------------------


def sse_session(base, token):
    """A legacy SSE session with UI, initialized; (connection, response, endpoint, send)."""
    conn, resp, endpoint = open_sse(base, token)
    assert endpoint, "the stream opened with its endpoint"
    rids = itertools.count(1)

    def send(method, params=None):
        rid = next(rids)
        code, _, text = request(base + endpoint, "POST", {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}, token=token)
        assert code == 202, (code, text)
        return rid

    rid = send("initialize", {"protocolVersion": "2025-06-18", "capabilities": UI_CAPS, "clientInfo": {"name": "sse", "version": "1"}})
    assert sse_answers(resp, {rid})[rid]["result"]["serverInfo"]
    request(base + endpoint, "POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, token=token)
    return conn, resp, send


def test_legacy_sse_refuses_a_denied_tool_call_and_a_denied_page_read(tmp_path):
    with token_proxy(tmp_path, TOKENS, config={"policy": RULES}, name="proxy-rules-sse") as (base, _proc, _log):
        # Alice, allowed: her read of the page on her stream (and it is kept ready from then on).
        conn, resp, send = sse_session(base, ALICE)
        try:
            rid = send("resources/read", {"uri": "ui://get_forecast"})
            page = sse_answers(resp, {rid})[rid]
            assert page["result"]["contents"][0]["text"].startswith("<!doctype html>"), page
        finally:
            conn.close()

        conn, resp, send = sse_session(base, BOB)
        try:
            ok = send("tools/call", {"name": "get_forecast", "arguments": {"city": "Oslo"}})
            call_refused = send("tools/call", {"name": "get_current_weather", "arguments": {"city": "Oslo"}})
            read_refused = send("resources/read", {"uri": "ui://get_forecast"})
            status_refused = send("tools/call", {"name": "_ui_page_status", "arguments": {"toolName": "get_forecast", "html": True}})
            answers = sse_answers(resp, {ok, call_refused, read_refused, status_refused})
            assert "result" in answers[ok] and not answers[ok]["result"].get("isError"), answers[ok]
            assert denied(answers[call_refused]), answers[call_refused]
            assert denied(answers[read_refused]), answers[read_refused]
            assert denied(answers[status_refused]), answers[status_refused]
            assert not any("<html" in json.dumps(answers[r]).lower() for r in (read_refused, status_refused))
        finally:
            conn.close()


# --- 2026 stateless ------------------------------------------------------------------------------


def test_a_2026_stateless_page_read_is_decided_by_the_rules(tmp_path):
    with token_proxy(tmp_path, TOKENS, config={"policy": RULES}, name="proxy-rules-2026") as (base, _proc, _log):
        status, _, page = post_2026(base, "resources/read", {"uri": "ui://get_forecast"}, headers={"Authorization": f"Bearer {ALICE}"})
        assert status == 200 and page["result"]["contents"][0]["text"].startswith("<!doctype html>"), (status, page)
        # Bob may call the tool statelessly, but not read its page (now made, and ready).
        status, _, ok = post_2026(base, "tools/call", {"name": "get_forecast", "arguments": {"city": "Oslo"}},
                                  headers={"Authorization": f"Bearer {BOB}"})
        assert status == 200 and "result" in ok, ok
        for _ in range(2):
            status, _, refused = post_2026(base, "resources/read", {"uri": "ui://get_forecast"}, headers={"Authorization": f"Bearer {BOB}"})
            assert denied(refused), (status, refused)
            assert "<html" not in json.dumps(refused).lower()
        # The page of a tool bob may not call either is no page at all to him (issue 54): it
        # reads exactly as a tool nobody has, so it does not tell him the tool exists.
        status, _, hidden = post_2026(base, "resources/read", {"uri": "ui://get_current_weather"}, headers={"Authorization": f"Bearer {BOB}"})
        _, _, nothing = post_2026(base, "resources/read", {"uri": "ui://no_such_tool"}, headers={"Authorization": f"Bearer {BOB}"})
        strip = lambda answer, name: json.dumps({k: v for k, v in answer.items() if k != "id"}).replace(name, "X")  # noqa: E731
        assert "error" in hidden and strip(hidden, "get_current_weather") == strip(nothing, "no_such_tool"), (hidden, nothing)


# --- the HTTP edge's fast path for ready pages ---------------------------------------------------


def ready_reads(log, uri) -> list:
    """The reads of `uri` the HTTP edge answered itself from the ready pages (its debug line)."""
    if not log.exists():
        return []
    out = []
    for line in log.read_text().splitlines():
        if "ready_read" not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        fields = entry.get("fields", entry)
        if fields.get("event") == "ready_read" and fields.get("uri") == uri:
            out.append(fields)
    return out


ONE = ["--auth-token", f"alice:{ALICE}"]
OPEN = {"default": "allow", "rules": [{"name": "no units", "tools": ["set_units"], "effect": "deny"}]}
NO_FORECAST_PAGE_OVER_HTTP = {"default": "allow", "rules": [
    {"name": "no forecast page over http", "tools": ["get_forecast"], "kinds": ["pages"], "effect": "deny",
     "when": "transport == 'streamable-http'"},
    {"name": "no units", "tools": ["set_units"], "effect": "deny"}]}


def set_policy(tmp_path, proc, policy):
    """The config file's policy replaced (whole, by a rename), and read again now (SIGHUP)."""
    path = tmp_path / "auth.json"
    cfg = json.loads(path.read_text())
    cfg["policy"] = policy
    (tmp_path / "auth.json.new").write_text(json.dumps(cfg))
    os.replace(tmp_path / "auth.json.new", path)
    os.kill(proc.p.pid, signal.SIGHUP)


def test_the_edges_fast_path_for_a_ready_page_refuses_what_the_rules_deny(tmp_path):
    """The HTTP edge answers a read of a ready page itself, without the session, only for one
    person: with several (OAuth, a tokens file, two labelled tokens) pages may be a person's own
    (issue 42) and the edge sends every read to the session. So one person, whose page is made
    ready over Streamable HTTP (the edge's debug line `ready_read` shows the edge serving it),
    then the rules changed to deny that page over Streamable HTTP: the ready page is refused at
    the edge, is still there for the same person over legacy SSE (which the rule leaves alone),
    and is served by the edge again once the rules allow it."""
    with token_proxy(tmp_path, ONE, config={"policy": OPEN}, name="proxy-rules-ready") as (base, proc, log):
        a = init_ui(base, ALICE)
        assert listed(base, ALICE, a)["get_forecast"] is True, "the forecast's page is given"

        # The first read makes the page (the offline provider writes it at once): the page itself,
        # not the provisional one, so it is kept ready.
        first = rpc(base, ALICE, a, "resources/read", {"uri": "ui://get_forecast"})["result"]["contents"][0]
        ours = first["_meta"]["mcp-gen-ui"]
        assert first["text"].startswith("<!doctype html>") and not ours.get("provisional") and "writing" not in ours, ours

        # Read until the edge answers from the ready page (a read that made the page cannot keep
        # it: the new page moves the tool's revision on; the next one keeps it).
        def served_by_edge():
            again = rpc(base, ALICE, a, "resources/read", {"uri": "ui://get_forecast"})["result"]["contents"][0]
            assert again["text"] == first["text"] and not again["_meta"]["mcp-gen-ui"].get("provisional"), again
            return ready_reads(log, "ui://get_forecast")

        wait_for(served_by_edge, 15, "a read of ui://get_forecast answered by the edge from the ready page", every=0.2)

        # The rules now deny that page over Streamable HTTP: the list says so ...
        set_policy(tmp_path, proc, NO_FORECAST_PAGE_OVER_HTTP)
        wait_for(lambda: listed(base, ALICE, a)["get_forecast"] is False, 15, "the reloaded rules take the page out of the list")
        # (The log is written in order: once the reload's line is in, so is every earlier read's.)
        wait_for_log(log, "policy_reloaded")
        edge_reads = len(ready_reads(log, "ui://get_forecast"))
        # ... and the ready page is refused, every time, with no HTML.
        for _ in range(3):
            code, _, text = request(base + "/mcp", "POST", {"jsonrpc": "2.0", "id": next(IDS), "method": "resources/read",
                                                            "params": {"uri": "ui://get_forecast"}}, token=ALICE, headers={"Mcp-Session-Id": a})
            assert code == 200, (code, text)
            assert denied(json.loads(text)), text
            assert "<html" not in text.lower() and first["text"][:200] not in text, "no page HTML gets through"
        # Other pages are still served over HTTP.
        other = rpc(base, ALICE, a, "resources/read", {"uri": "ui://get_current_weather"})
        assert other["result"]["contents"][0]["text"].startswith("<!doctype html>"), other

        # Over legacy SSE the rule does not apply: the same page, still ready, for the same person.
        conn, resp, send = sse_session(base, ALICE)
        try:
            rid = send("resources/read", {"uri": "ui://get_forecast"})
            assert sse_answers(resp, {rid})[rid]["result"]["contents"][0]["text"] == first["text"]
        finally:
            conn.close()

        # The rules allow it again: the edge serves the page it kept all along (nothing made it
        # again), one read more than before the refusals (none of which it served).
        set_policy(tmp_path, proc, OPEN)
        wait_for(lambda: listed(base, ALICE, a)["get_forecast"] is True, 15, "the reloaded rules give the page again")
        back = rpc(base, ALICE, a, "resources/read", {"uri": "ui://get_forecast"})["result"]["contents"][0]
        assert back["text"] == first["text"]
        wait_for(lambda: len(ready_reads(log, "ui://get_forecast")) == edge_reads + 1, 10, "the edge serving the kept page again")

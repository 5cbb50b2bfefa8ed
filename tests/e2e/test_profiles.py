"""Issue 32: profiles (named views of the fleet at /mcp/<profile>, --profile on stdio) and search
mode (search_tools, describe_tools, call_tool), on a Claude Desktop file of five real servers:
server-everything, server-memory, mcp-server-time, server-filesystem and the demo weather
server. The browser side (a tool called through search showing its own page in the official
AppBridge) is tests/node/browser/search.test.mjs."""

import contextlib
import http.client
import itertools
import json
import os
import re
import subprocess
import time
from pathlib import Path

from conftest import BIN, NODE, NODE_MODULES, UI_EXT, metric, proxy_http, wait_for
from test_auth import request
from test_many_servers import EVERYTHING, MEMORY, TIME
from test_policy import sse_answers

FILESYSTEM = NODE_MODULES / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
TASKS = json.loads((Path(__file__).parent / "search_tasks.json").read_text())["tasks"]
# Held-out tasks search_tools finds in the top 3 at least (issue 52): what the ranking finds over
# the five servers alone, 3 of 30 (two "folder" tasks through the synonym "directory", "17 plus
# 25" through "sum"; the ranking and its synonyms unchanged since 5dfa190). Fewer fails.
HELD_OUT_FLOOR = 3
IDS = itertools.count(100)

PROFILES = {
    "small": {"tools": ["memory__*", "time__*"],
              "overrides": {"memory__read_graph": {"name": "graph", "description": "The whole knowledge graph",
                                                   "annotations": {"title": "Graph"}}}},
    "all": {"tools": ["*"], "discovery": "search", "pin": ["weather__*"]},
    "readonly": {"servers": ["files"], "tools": ["files__read_*", "files__list_*", "files__get_*"]},
}


# Words a task may share with a tool without saying what it does.
STOP_WORDS = frozenset("""a an the and or but if then so of to in on at by for from with into onto over under about as is are was were
be been being am do does did done have has had having i me my mine you your yours we us our he him his she her it its they them their
this that these those what which who whom whose where when why how all any some no not can could would should will shall may might must
just also there here up out off than too very now please let s t d ll re ve m o""".split())


def stem(word: str) -> str:
    """A word less its ending: "files" and "file" give "fil"; "moving", "moved" and "move", "mov";
    "directories", "directory"."""
    for suffix, instead in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 2 and not (suffix == "s" and word.endswith("ss")):
            word = word[:-len(suffix)] + instead
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]  # "logging" -> "logg" -> "log"
    return word


def content_words(text: str) -> set[str]:
    """Stems of the words of a task, a tool's name (split on _, -, camelCase) or a description."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return {stem(w) for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP_WORDS and len(w) > 1}


def shared_words(task: str, tool: dict) -> set[str]:
    """The words a task shares with a tool's name, description and input properties (names and
    descriptions): a stem, or one beginning the other when both have five letters or more
    ("compress", "compression")."""
    props = tool.get("inputSchema", {}).get("properties", {})
    text = " ".join([tool["name"], tool.get("description") or ""] + [f"{k} {v.get('description') or ''}" for k, v in props.items()])
    theirs = content_words(text)
    return {a for a in content_words(task) for b in theirs if a == b or (min(len(a), len(b)) >= 5 and (a.startswith(b) or b.startswith(a)))}


def five_servers(tmp_path) -> Path:
    (tmp_path / "files").mkdir(exist_ok=True)
    (tmp_path / "files" / "notes.txt").write_text("hello from the files server\n")
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(json.dumps({"mcpServers": {
        "everything": {"command": NODE, "args": [str(EVERYTHING), "stdio"]},
        "memory": {"command": NODE, "args": [str(MEMORY)], "env": {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}},
        "time": {"command": str(TIME), "args": ["--local-timezone", "UTC"]},
        "files": {"command": NODE, "args": [str(FILESYSTEM), str(tmp_path / "files")]},
        "weather": {"command": str(BIN), "args": ["demo-upstream"]},
    }}))
    return path


def session(base, path="/mcp", ui=True):
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {"extensions": UI_EXT} if ui else {}, "clientInfo": {"name": "profiles", "version": "1"}}}
    code, headers, text = request(base + path, "POST", body)
    assert code == 200, (code, text)
    sid = headers["Mcp-Session-Id"]
    request(base + path, "POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers={"Mcp-Session-Id": sid})
    return sid


def rpc(base, path, sid, method, params=None):
    code, _, text = request(base + path, "POST", {"jsonrpc": "2.0", "id": next(IDS), "method": method, "params": params or {}},
                            headers={"Mcp-Session-Id": sid})
    assert code == 200, (code, text)
    return json.loads(text)


def tools(base, path, sid):
    return {t["name"]: t for t in rpc(base, path, sid, "tools/list")["result"]["tools"]}


@contextlib.contextmanager
def proxy(tmp_path, name, config=None):
    """The five servers behind one endpoint with PROFILES; yields (base, Proc, service log)."""
    cfg = {"profiles": PROFILES, "logging": {"file": str(tmp_path / "service.log")}, "server": {"sseKeepaliveSecs": 1}, **(config or {})}
    path = tmp_path / "auth.json"
    path.write_text(json.dumps(cfg))
    args = ["--servers-file", str(five_servers(tmp_path)), "--no-auth", "--log-format", "json", "--config", str(path)]
    with proxy_http(args, name=name) as (base, proc):
        yield base, proc, tmp_path / "service.log"


def test_each_profile_lists_what_its_globs_select_with_its_overrides(tmp_path):
    with proxy(tmp_path, "proxy-profiles") as (base, _proc, _log):
        small = session(base, "/mcp/small")
        listed = tools(base, "/mcp/small", small)
        mine = {n for n in listed if not n.startswith("_ui_")}
        assert mine == {"memory__create_entities", "memory__create_relations", "memory__add_observations", "memory__delete_entities",
                        "memory__delete_observations", "memory__delete_relations", "graph", "memory__search_nodes", "memory__open_nodes",
                        "time__get_current_time", "time__convert_time"}, mine
        graph = listed["graph"]
        assert graph["description"] == "The whole knowledge graph" and graph["annotations"]["title"] == "Graph"
        assert graph["_meta"]["ui"]["resourceUri"] == "ui://memory/read_graph", "a renamed tool keeps its page"

        readonly = session(base, "/mcp/readonly")
        names = {n for n in tools(base, "/mcp/readonly", readonly) if not n.startswith("_ui_")}
        assert names and all(n.startswith(("files__read_", "files__list_", "files__get_")) for n in names), names
        assert "files__write_file" not in names
        refused = rpc(base, "/mcp/readonly", readonly, "tools/call", {"name": "files__write_file", "arguments": {"path": "x", "content": "y"}})
        assert "no tool named \"files__write_file\" in profile \"readonly\"" in refused["error"]["message"], refused

        everything = session(base, "/mcp")
        # server-everything offers its two host-task tools too: the service runs a server's
        # sampling and elicitation as a host's tasks (docs/tasks.md).
        assert len([n for n in tools(base, "/mcp", everything) if not n.startswith("_ui_")]) == 47, "/mcp has every tool"

        # The sizes of each profile's list, on /readyz.
        state = json.loads(request(base + "/readyz")[2])
        sizes = {p["path"]: p for p in state["profiles"]}
        assert sizes["/mcp"]["tools"] == 53 and sizes["/mcp/all"]["discovery"] == "search"
        assert sizes["/mcp/all"]["listBytes"] < sizes["/mcp"]["listBytes"] / 4, sizes

        # An unknown profile, and a session used on another profile's path: not found.
        code, _, text = request(base + "/mcp/nope", "POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
        assert code == 404 and "/mcp/small" in text, text
        code, _, _ = request(base + "/mcp/all", "POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers={"Mcp-Session-Id": small})
        assert code == 404, "a session belongs to its profile's path"


def test_a_renamed_tool_works_by_both_names_and_its_page_too(tmp_path):
    with proxy(tmp_path, "proxy-profiles-rename") as (base, _proc, _log):
        sid = session(base, "/mcp/small")
        rpc(base, "/mcp/small", sid, "tools/call", {"name": "memory__create_entities", "arguments": {
            "entities": [{"name": "Alice", "entityType": "person", "observations": ["likes tea"]}]}})
        by_profile_name = rpc(base, "/mcp/small", sid, "tools/call", {"name": "graph", "arguments": {}})
        assert "Alice" in json.dumps(by_profile_name["result"]), by_profile_name
        # Its page calls it by the catalog's name: that works in the profile too.
        by_page_name = rpc(base, "/mcp/small", sid, "tools/call", {"name": "memory__read_graph", "arguments": {}})
        assert by_page_name["result"] == by_profile_name["result"]
        page = rpc(base, "/mcp/small", sid, "resources/read", {"uri": "ui://memory/read_graph"})
        html = page["result"]["contents"][0]["text"]
        assert html.startswith("<!doctype html>") and "memory__read_graph" in html, "the page is the catalog's, shared"
        inspect = rpc(base, "/mcp/small", sid, "tools/call", {"name": "_ui_inspect", "arguments": {"toolName": "graph"}})
        assert "isError" not in inspect["result"] or not inspect["result"]["isError"], inspect
        # A page of a tool outside the profile is not this profile's.
        outside = rpc(base, "/mcp/small", sid, "resources/read", {"uri": "ui://weather/get_forecast"})
        assert "error" in outside, outside


def test_search_finds_the_tool_for_plain_language_tasks(tmp_path):
    with proxy(tmp_path, "proxy-profiles-search") as (base, _proc, _log):
        sid = session(base, "/mcp/all")
        listed = tools(base, "/mcp/all", sid)
        assert {n for n in listed if not n.startswith("_ui_")} == {
            "weather__get_current_weather", "weather__get_forecast", "weather__get_weather_map", "weather__set_units",
            "search_tools", "describe_tools", "call_tool"}
        assert listed["call_tool"]["_meta"]["ui"]["resourceUri"] == "ui://_ui/call_tool", "call_tool has a page of its own"
        def top3(tasks):
            hits, misses = 0, []
            for t in tasks:
                found = rpc(base, "/mcp/all", sid, "tools/call", {"name": "search_tools", "arguments": {"query": t["task"], "limit": 3}})
                names = [x["name"] for x in found["result"]["structuredContent"]["tools"]]
                if any(n in t["tools"] for n in names):
                    hits += 1
                else:
                    misses.append((t["task"], names))
            return hits, misses

        # The held-out tasks (written after the ranking's synonyms, none shares a word with its
        # tools): the ranking's own figure, held to what it finds now (tests/bench/search.py
        # reports it with noise tools).
        held_out = [t for t in TASKS if t.get("held_out")]
        hits, misses = top3(held_out)
        print(f"held-out tasks: {hits}/{len(held_out)} in the top 3")
        assert hits >= HELD_OUT_FLOOR, f"held-out top-3 hits {hits}/{len(held_out)}, below {HELD_OUT_FLOOR}; missed {misses}"
        # The tuning set (the synonyms were written with it) less its one task that shares no word
        # with its tools: 90% in the top 3.
        tasks = [t for t in TASKS if not t.get("held_out") and not t.get("shares_no_word")]
        hits, misses = top3(tasks)
        assert hits >= 0.9 * len(tasks), f"top-3 hits {hits}/{len(tasks)}; missed {misses}"
        one = rpc(base, "/mcp/all", sid, "tools/call", {"name": "search_tools", "arguments": {"query": "what time is it in Tokyo", "limit": 1}})
        first = one["result"]["structuredContent"]["tools"][0]
        assert first["name"].startswith("time__") and first["description"] and first["score"] > 0
        described = rpc(base, "/mcp/all", sid, "tools/call", {"name": "describe_tools", "arguments": {"names": ["time__convert_time", "nope"]}})
        d = described["result"]["structuredContent"]
        assert d["tools"][0]["inputSchema"]["required"] and d["unknown"] == ["nope"]
        bad = rpc(base, "/mcp/all", sid, "tools/call", {"name": "search_tools", "arguments": {"query": "x", "limit": 500}})
        assert bad["error"]["code"] == -32602 and "limit" in bad["error"]["message"]


def test_the_tasks_marked_shares_no_word_share_no_word_with_their_tools(tmp_path):
    """search_tasks.json's shares_no_word tasks share no content word with their tools' names,
    descriptions and input properties, as the fleet lists them (not a copy that could go stale)."""
    hard = [t for t in TASKS if t.get("shares_no_word")]
    assert len(hard) >= 15, len(hard)
    with proxy(tmp_path, "proxy-profiles-words") as (base, _proc, _log):
        listed = tools(base, "/mcp", session(base, "/mcp", ui=False))
    unknown = {n for t in TASKS for n in t["tools"]} - set(listed)
    assert not unknown, f"tasks name tools the fleet does not have: {unknown}"
    shared = {(t["task"], n): words for t in hard for n in t["tools"] if (words := shared_words(t["task"], listed[n]))}
    assert not shared, shared
    # The check sees shared words where there are some: in every other task, and across forms of
    # a word.
    blind = [t["task"] for t in TASKS if not t.get("shares_no_word") and not any(shared_words(t["task"], listed[n]) for n in t["tools"])]
    assert not blind, f"unmarked tasks that share no word with their tools: {blind}"
    assert shared_words("Moving the directories, logging it", {"name": "move_file", "description": "Directory log"}) == {"mov", "directory", "log"}
    assert shared_words("compression", {"name": "x", "description": "Compresses a file"}) == {"compression"}


def test_call_tool_routes_validates_and_refuses_like_a_direct_call(tmp_path):
    audit = tmp_path / "audit.jsonl"
    rules = {"default": "allow", "rules": [{"name": "no maps", "tools": ["weather__get_weather_map"], "effect": "deny"}]}
    with proxy(tmp_path, "proxy-profiles-call", config={"policy": rules, "audit": {"file": str(audit)}}) as (base, _proc, _log):
        sid, direct = session(base, "/mcp/all"), session(base, "/mcp")
        via = rpc(base, "/mcp/all", sid, "tools/call", {"name": "call_tool", "arguments": {
            "name": "files__read_text_file", "arguments": {"path": str(tmp_path / "files" / "notes.txt")}}})
        same = rpc(base, "/mcp", direct, "tools/call", {"name": "files__read_text_file", "arguments": {"path": str(tmp_path / "files" / "notes.txt")}})
        assert via["result"] == same["result"] and "hello from the files server" in json.dumps(via["result"])
        # The schema is checked before anything is sent: what is wrong, where.
        bad = rpc(base, "/mcp/all", sid, "tools/call", {"name": "call_tool", "arguments": {"name": "time__convert_time", "arguments": {"source_timezone": 3}}})
        msg = bad["error"]["message"]
        assert bad["error"]["code"] == -32602 and "/source_timezone" in msg and "required property" in msg, msg
        unknown = rpc(base, "/mcp/all", sid, "tools/call", {"name": "call_tool", "arguments": {"name": "nope__x"}})
        assert "search_tools finds" in unknown["error"]["message"]
        # The rules decide a call through call_tool as they decide a direct one.
        denied = rpc(base, "/mcp/all", sid, "tools/call", {"name": "call_tool", "arguments": {"name": "weather__get_weather_map", "arguments": {"city": "Oslo"}}})
        assert denied["error"]["code"] == -32003, denied
        # A server's own error comes back as it does directly.
        upstream_err = rpc(base, "/mcp/all", sid, "tools/call", {"name": "call_tool", "arguments": {"name": "files__read_text_file", "arguments": {"path": "/etc/passwd"}}})
        direct_err = rpc(base, "/mcp", direct, "tools/call", {"name": "files__read_text_file", "arguments": {"path": "/etc/passwd"}})
        assert upstream_err == {**direct_err, "id": upstream_err["id"]}
        # The trail is written in batches: wait until both lines are in.
        def called():
            lines = [json.loads(x) for x in audit.read_text().splitlines()]
            return [(x["event"], x.get("tool")) for x in lines if x["event"] in ("tool_call", "denied")]
        wait_for(lambda: {("tool_call", "files__read_text_file"), ("denied", "weather__get_weather_map")} <= set(called()), 10,
                 "the call through call_tool and its denial in the audit trail")
        assert metric(scrape(base), "mcp_gen_ui_policy_decisions_total", rule="no maps", outcome="deny") == 1


def scrape(base):
    from conftest import scrape as s
    return s(base)


def test_profiles_reload_and_hosts_hear_of_it(tmp_path):
    with proxy(tmp_path, "proxy-profiles-reload") as (base, proc, log):
        port = int(base.rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        conn.request("GET", "/sse/small", headers={"Accept": "text/event-stream"})
        resp = conn.getresponse()
        assert resp.status == 200
        endpoint = next(line for line in iter(lambda: resp.fp.readline().decode(), "") if line.startswith("data:"))[5:].strip()
        try:
            request(base + endpoint, "POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "sse", "version": "1"}}})
            request(base + endpoint, "POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            first = sse_answers(resp, {1, 2})
            assert "graph" in {t["name"] for t in first[2]["result"]["tools"]}, "legacy SSE serves profiles too (/sse/<profile>)"
            cfg_path = tmp_path / "auth.json"
            cfg = json.loads(cfg_path.read_text())
            cfg["profiles"]["small"]["tools"] = ["time__*"]
            cfg["profiles"]["tiny"] = {"tools": ["weather__get_forecast"]}
            cfg_path.write_text(json.dumps(cfg))
            os.kill(proc.p.pid, 1)
            deadline = time.time() + 15
            heard = False
            while time.time() < deadline and not heard:
                line = resp.fp.readline().decode()
                heard = "notifications/tools/list_changed" in line
            assert heard, "hosts hear list_changed when the profiles change"
            request(base + endpoint, "POST", {"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
            names = {t["name"] for t in sse_answers(resp, {3})[3]["result"]["tools"] if not t["name"].startswith("_ui_")}
            assert names == {"time__get_current_time", "time__convert_time"}, names
        finally:
            conn.close()
        sid = session(base, "/mcp/tiny")
        assert {n for n in tools(base, "/mcp/tiny", sid) if not n.startswith("_ui_")} == {"weather__get_forecast"}
        # A profile that does not check out keeps the running ones.
        cfg["profiles"]["tiny"]["tools"] = []
        cfg_path.write_text(json.dumps(cfg))
        os.kill(proc.p.pid, 1)
        wait_for(lambda: "profiles.tiny.tools" in log.read_text(), 15, "the rejected profile named in the log")
        assert {n for n in tools(base, "/mcp/tiny", sid) if not n.startswith("_ui_")} == {"weather__get_forecast"}


def test_a_profile_on_stdio_and_errors_at_start(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"profiles": PROFILES}))
    servers = five_servers(tmp_path)
    p = subprocess.Popen([str(BIN), "--transport", "stdio", "--servers-file", str(servers), "--config", str(cfg), "--profile", "small"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        def ask(msg):
            p.stdin.write(json.dumps(msg) + "\n")
            p.stdin.flush()
            skipped = []
            while len(skipped) < 1000:  # notifications may come first; the answer is never that far behind
                line = json.loads(p.stdout.readline())
                if line.get("id") == msg.get("id"):
                    return line
                skipped.append(line)
            raise AssertionError(f"no answer to {msg['method']} after {len(skipped)} other messages: {skipped[-3:]}")

        ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "s", "version": "1"}}})
        deadline = time.time() + 30
        names = set()
        while time.time() < deadline and "graph" not in names:
            names = {t["name"] for t in ask({"jsonrpc": "2.0", "id": next(IDS), "method": "tools/list"})["result"]["tools"]}
            time.sleep(0.3)
        assert "graph" in names and "weather__get_forecast" not in names, names
    finally:
        p.kill()
        p.wait()
    r = subprocess.run([str(BIN), "--transport", "stdio", "--config", str(cfg), "--profile", "nope", "--demo"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--profile" in r.stderr and "small" in r.stderr, r.stderr
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"profiles": {"x": {"tools": ["*"], "overrides": {"a__b": {"name": "_ui_refine"}}}}}))
    r = subprocess.run([str(BIN), "--demo", "--config", str(bad), "--listen", "127.0.0.1:0"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "profiles.x.overrides.a__b.name" in r.stderr, r.stderr


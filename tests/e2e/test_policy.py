"""Issue 31: who may call what, and who did. Rules in CEL over the principal (a labelled token, a
JWT's claims), the tool and its arguments decide what each principal sees in its lists and may
call or read, over Streamable HTTP, legacy SSE and a 2026 stateless call; the audit trail holds
one JSON line per call under load from several principals, no secret in it; a sink that fails
or cannot keep up costs requests nothing (or, with audit.required, refuses calls); rules that do
not compile are named at start and on a reload, which keeps the running rules."""

import itertools
import json
import os
import signal
import stat
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from conftest import BIN, METRICS_TOKEN, metric, wait_for
from test_auth import JwksServer, open_sse, public_jwk, request, token_proxy
from test_protocol_2026 import post as post_2026
from test_teams import post, scrape_with

ALICE, BOB, ERIN = "alice-token-5f2e9c1b7a", "bob-token-0d8e4b6a2c", "erin-token-77ab01c3d9"
TOKENS = ["--auth-token", f"alice:{ALICE}", "--auth-token", f"bob:{BOB}", "--auth-token", f"erin:{ERIN}"]
AUDIENCE = "http://mcp.test/mcp"
UI_CAPS = {"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}}

RULES = {
    "default": "deny",
    "rules": [
        {"name": "no secret city", "tools": ["*"], "effect": "deny", "when": "has(args.city) && args.city == 'Secret'"},
        {"name": "ops", "effect": "allow", "when": "'ops' in principal.claims.groups"},
        {"name": "alice reads", "tools": ["get_*"], "effect": "allow", "when": "principal.name == 'alice'"},
        {"name": "bob forecast", "tools": ["get_forecast"], "kinds": ["tools"], "effect": "allow", "when": "principal.name == 'bob'"},
        {"name": "erin all", "effect": "allow", "when": "principal.name == 'erin'"},
        {"name": "ui tools", "tools": ["_ui_*"], "kinds": ["tools"], "effect": "allow"},
    ],
}


def init_ui(base, token):
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": UI_CAPS, "clientInfo": {"name": "policy-test", "version": "1"}}}
    code, headers, text = request(base + "/mcp", "POST", body, token=token)
    assert code == 200, text
    sid = headers["Mcp-Session-Id"]
    post(base, token, sid, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return sid


IDS = itertools.count(10)


def rpc(base, token, sid, method, params):
    # Ids unique across threads: one session may have many requests in flight.
    code, _, text = post(base, token, sid, {"jsonrpc": "2.0", "id": next(IDS), "method": method, "params": params})
    assert code == 200, (code, text)
    return json.loads(text)


def listed(base, token, sid):
    """The tools listed: the upstream's with whether they come with a page, and the _ui_* ones."""
    tools = rpc(base, token, sid, "tools/list", {})["result"]["tools"]
    return {t["name"]: (None if t["name"].startswith("_ui_") else "ui" in t.get("_meta", {})) for t in tools}


def call(base, token, sid, tool, **args):
    return rpc(base, token, sid, "tools/call", {"name": tool, "arguments": args})


def denied(answer) -> bool:
    err = answer.get("error") or {}
    return err.get("code") == -32003 and err.get("message", "").startswith("not allowed")


def jwt_maker():
    jwks = JwksServer()
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwks.keys = [public_jwk(key, "k1", "RS256")]

    def make(sub, groups):
        now = int(time.time())
        claims = {"iss": jwks.url, "aud": AUDIENCE, "sub": sub, "iat": now, "exp": now + 600, "groups": groups}
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})

    args = ["--oauth-issuer", jwks.url, "--oauth-audience", AUDIENCE, "--oauth-jwks-url", jwks.url + "/jwks"]
    return jwks, make, args


def test_each_principal_sees_and_calls_only_what_its_rules_allow(tmp_path):
    jwks, make, oauth = jwt_maker()
    try:
        with token_proxy(tmp_path, [*TOKENS, *oauth], config={"policy": RULES}, name="proxy-policy") as (base, _proc, log):
            ui = {"_ui_list", "_ui_inspect", "_ui_regenerate", "_ui_refresh_tools", "_ui_refine", "_ui_page_status"}
            a, b = init_ui(base, ALICE), init_ui(base, BOB)
            ops, dev = make("carol@example.com", ["ops"]), make("dave@example.com", ["dev"])
            c, d = init_ui(base, ops), init_ui(base, dev)

            # What each one is shown: names, and a page (_meta.ui) only where pages are allowed.
            assert listed(base, ALICE, a) == {"get_current_weather": True, "get_forecast": True, "get_weather_map": True, **{u: None for u in ui}}
            assert listed(base, BOB, b) == {"get_forecast": False, **{u: None for u in ui}}, "bob's rule is for calls only: no page"
            assert set(listed(base, ops, c)) == {"get_current_weather", "get_forecast", "get_weather_map", "set_units", *ui}
            assert set(listed(base, dev, d)) == ui, "a JWT without the ops group is only given the _ui_* tools"

            # Calls: the list is what may be called; the arguments are checked on every call.
            assert "result" in call(base, BOB, b, "get_forecast", city="Oslo")
            assert denied(call(base, BOB, b, "get_forecast", city="Secret"))
            assert denied(call(base, ALICE, a, "set_units", units="imperial")), "not listed, not callable"
            assert "result" in call(base, ops, c, "set_units", units="metric")
            assert denied(call(base, ops, c, "get_forecast", city="Secret")), "the first rule wins, even for ops"
            assert denied(call(base, dev, d, "get_current_weather", city="Oslo"))

            # Pages: alice reads get_forecast's (it becomes ready: the edge serves it from then on);
            # bob may call the tool but not read its page, ready or not; nor list it.
            page = rpc(base, ALICE, a, "resources/read", {"uri": "ui://get_forecast"})
            assert page["result"]["contents"][0]["text"].startswith("<!doctype html>")
            for _ in range(2):
                assert denied(rpc(base, BOB, b, "resources/read", {"uri": "ui://get_forecast"}))
            bob_resources = [r["uri"] for r in rpc(base, BOB, b, "resources/list", {})["result"]["resources"]]
            assert "ui://get_forecast" not in bob_resources
            assert "ui://get_forecast" in [r["uri"] for r in rpc(base, ALICE, a, "resources/list", {})["result"]["resources"]]

            # The _ui_* tools obey the rules for the tool they name.
            assert denied(call(base, BOB, b, "_ui_inspect", toolName="get_forecast"))
            assert denied(call(base, BOB, b, "_ui_refine", toolName="get_forecast", feedback="a table"))
            listing = json.loads(call(base, BOB, b, "_ui_list")["result"]["content"][0]["text"])
            assert listing["tools"] == [], "bob may read no page"
            assert "result" in call(base, ALICE, a, "_ui_inspect", toolName="get_forecast")

            # Legacy SSE: bob's session is decided by the same rules.
            conn, resp, endpoint = open_sse(base, BOB)
            try:
                code, _, _ = request(base + endpoint, "POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": UI_CAPS, "clientInfo": {"name": "sse", "version": "1"}}}, token=BOB)
                assert code == 202
                request(base + endpoint, "POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, token=BOB)
                request(base + endpoint, "POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, token=BOB)
                request(base + endpoint, "POST", {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                                  "params": {"name": "get_forecast", "arguments": {"city": "Secret"}}}, token=BOB)
                answers = sse_answers(resp, {2, 3})
                assert {t["name"] for t in answers[2]["result"]["tools"]} == {"get_forecast", *ui}
                assert denied(answers[3])
            finally:
                conn.close()

            # A 2026-07-28 stateless call: the same rules, from the request's own principal.
            status, _, ans = post_2026(base, "tools/call", {"name": "get_forecast", "arguments": {"city": "Oslo"}},
                                       headers={"Authorization": f"Bearer {dev}"})
            assert denied(ans), (status, ans)
            status, _, ans = post_2026(base, "tools/call", {"name": "get_forecast", "arguments": {"city": "Oslo"}},
                                       headers={"Authorization": f"Bearer {BOB}"})
            assert status == 200 and "result" in ans, ans
            status, _, ans = post_2026(base, "tools/list", {}, headers={"Authorization": f"Bearer {BOB}"})
            assert [t["name"] for t in ans["result"]["tools"] if not t["name"].startswith("_ui_")] == ["get_forecast"]

            samples = scrape_with(base, METRICS_TOKEN)
            assert metric(samples, "mcp_gen_ui_policy_decisions_total", rule="no secret city", outcome="deny") == 3
            assert metric(samples, "mcp_gen_ui_policy_decisions_total", rule="bob forecast", outcome="allow") >= 2
            assert metric(samples, "mcp_gen_ui_policy_decisions_total", rule="default", outcome="deny") >= 5
            assert "alice-token" not in log.read_text() and "dave@example.com" in log.read_text()
    finally:
        jwks.stop()


def sse_answers(resp, ids: set, timeout=20) -> dict:
    """Reads a legacy SSE stream until every id in `ids` is answered."""
    out, deadline = {}, time.time() + timeout
    while ids - set(out) and time.time() < deadline:
        line = resp.fp.readline().decode()
        if line.startswith("data:"):
            with_id = json.loads(line[5:])
            if isinstance(with_id, dict) and with_id.get("id") in ids:
                out[with_id["id"]] = with_id
    assert not ids - set(out), f"unanswered: {ids - set(out)}"
    return out


def start_failure(tmp_path, config: dict) -> str:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(config))
    r = subprocess.run([str(BIN), "--demo", "--config", str(path), "--listen", "127.0.0.1:0"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, (r.returncode, r.stderr)
    return r.stderr


def test_rules_that_do_not_compile_are_named_at_start_and_a_bad_reload_keeps_the_running_ones(tmp_path):
    err = start_failure(tmp_path, {"policy": {"rules": [{"tools": ["*"], "effect": "allow"},
                                                        {"name": "broken", "tools": ["*"], "effect": "deny", "when": "args.city == "}]}})
    assert "policy.rules[1].when" in err and "line 1, column 14" in err and '"broken"' in err, err
    err = start_failure(tmp_path, {"policy": {"rules": [{"tools": ["*"], "effect": "deny", "when": "user.group == 'x'"}]}})
    assert "policy.rules[0].when" in err and '"user" is not a variable' in err, err
    err = start_failure(tmp_path, {"policy": {"rules": [{"tools": ["*"]}]}})
    assert "policy.rules[0].effect" in err, err

    first = {"default": "allow", "rules": [{"name": "no maps", "tools": ["get_weather_map"], "effect": "deny"}]}
    with token_proxy(tmp_path, TOKENS, config={"policy": first, "audit": {"file": str(tmp_path / "audit.jsonl")}},
                     name="proxy-policy-reload") as (base, proc, log):
        sid = init_ui(base, BOB)
        assert "get_weather_map" not in listed(base, BOB, sid)
        cfg_path = tmp_path / "auth.json"
        cfg = json.loads(cfg_path.read_text())
        cfg["policy"]["rules"][0]["when"] = "principal.name =="
        cfg_path.write_text(json.dumps(cfg))
        wait_for_log(log, "policy_reload_failed")
        assert "policy.rules[0].when" in log.read_text()
        assert "get_weather_map" not in listed(base, BOB, sid), "a bad version keeps the running rules"
        cfg["policy"] = {"default": "allow", "rules": [{"name": "no forecasts", "tools": ["get_forecast"], "effect": "deny"}]}
        cfg_path.write_text(json.dumps(cfg))
        os.kill(proc.p.pid, 1)  # SIGHUP: read again now
        wait_for_log(log, "policy_reloaded")
        now = listed(base, BOB, sid)
        assert "get_weather_map" in now and "get_forecast" not in now, now
        # The reload's line follows its log line: the trail is written in batches.
        deadline = time.time() + 5
        while True:
            reloads = [json.loads(x) for x in (tmp_path / "audit.jsonl").read_text().splitlines() if '"config_reload"' in x]
            if "ok" in [r["outcome"] for r in reloads] or time.time() > deadline:
                break
            time.sleep(0.05)
        assert [r["outcome"] for r in reloads][:1] == ["error"] and "ok" in [r["outcome"] for r in reloads], reloads


def wait_for_log(log, event, timeout=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if log.exists() and f'"event":"{event}"' in log.read_text().replace(" ", ""):
            return
        time.sleep(0.2)
    raise AssertionError(f"no {event} in the log: {log.read_text()[-2000:]}")


def test_the_audit_file_has_exactly_one_line_per_call_under_load(tmp_path):
    """Three principals, three thousand calls at once (a quarter of them denied by the
    arguments): one line each in the file, none with a token in it, the file private."""
    audit = tmp_path / "audit.jsonl"
    rules = {"default": "allow", "rules": [{"name": "no secret city", "tools": ["*"], "effect": "deny",
                                            "when": "has(args.city) && args.city == 'Secret'"}]}
    per, threads = 1000, 6
    with token_proxy(tmp_path, TOKENS, config={"policy": rules, "audit": {"file": str(audit)}}, name="proxy-audit-load") as (base, _proc, log):
        people = {"alice": ALICE, "bob": BOB, "erin": ERIN}
        sessions = {name: init_ui(base, tok) for name, tok in people.items()}

        def work(job):
            name, n = job
            tok, sid = people[name], sessions[name]
            city = "Secret" if n % 4 == 0 else f"City {n}"
            answer = call(base, tok, sid, "get_current_weather", city=city)
            return name, denied(answer), "result" in answer

        jobs = [(name, n) for n in range(per) for name in people]
        with ThreadPoolExecutor(threads) as pool:
            results = list(pool.map(work, jobs))
        assert all(d or ok for _, d, ok in results)
        deadline = time.time() + 20
        while time.time() < deadline:
            lines = [json.loads(x) for x in audit.read_text().splitlines()]
            calls = [x for x in lines if x["event"] in ("tool_call", "denied")]
            if len(calls) >= len(jobs):
                break
            time.sleep(0.2)
        assert len(calls) == len(jobs) == 3 * per, (len(calls), len(jobs))
        for name in people:
            mine = [x for x in calls if x["principal"] == name]
            assert len(mine) == per, (name, len(mine))
            assert sum(x["event"] == "denied" for x in mine) == per // 4, name
            assert all(x["event"] == "tool_call" and x["outcome"] == "ok" or x["outcome"] == "denied" for x in mine)
        assert len({x["request_id"] for x in calls}) == len(calls), "each line is one request"
        assert all(len(x["args_sha256"]) == 64 and "args" not in x for x in calls), "arguments only as a digest"
        assert {x["tool"] for x in calls} == {"get_current_weather"}
        assert {x["session"] for x in calls} == {x["session"] for x in lines if x["event"] == "session_open"}
        text = audit.read_text()
        for secret in (ALICE, BOB, ERIN, "City 1\""):
            assert secret not in text, f"{secret!r} is in the audit file"
        assert stat.S_IMODE(audit.stat().st_mode) == 0o600
        samples = scrape_with(base, METRICS_TOKEN)
        assert metric(samples, "mcp_gen_ui_audit_lines_total", outcome="dropped") == 0
        assert metric(samples, "mcp_gen_ui_audit_lines_total", outcome="written") == len(lines)
        assert "alice-token" not in log.read_text()


def test_every_answered_call_is_in_the_trail_when_the_service_stops(tmp_path):
    # Calls keep coming when SIGTERM arrives: those answered during the drain are the last
    # lines, written in a batch the writer gathers; the service exits only once they are in
    # the file (a line taken off the queue still counts until it is flushed).
    audit = tmp_path / "audit.jsonl"
    with token_proxy(tmp_path, TOKENS, config={"audit": {"file": str(audit)}}, name="proxy-audit-stop") as (base, proc, _log):
        sid = init_ui(base, ALICE)
        answered, stop = [], threading.Event()

        def work(n):
            while not stop.is_set():
                try:
                    a = call(base, ALICE, sid, "get_current_weather", city=f"City {n}")
                except Exception:
                    return
                if "result" in a:
                    answered.append(a)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        try:
            wait_for(lambda: len(answered) > 20, 30, "calls flowing before SIGTERM")
            proc.p.send_signal(signal.SIGTERM)
            assert proc.p.wait(timeout=15) == 0
        finally:
            stop.set()
            for t in threads:
                t.join(10)
    ok = [x for x in map(json.loads, audit.read_text().splitlines()) if x["event"] == "tool_call" and x["outcome"] == "ok"]
    assert len(answered) > 20 and len(ok) == len(answered), (len(answered), len(ok))


def test_the_whole_arguments_only_when_asked_and_never_through_a_symlink(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("")
    link = tmp_path / "audit.jsonl"
    # A link given at start is refused then (test_check.py); one put in place of the file
    # while the service runs is refused by the writer, which never follows one.
    with token_proxy(tmp_path, TOKENS, config={"audit": {"file": str(link), "arguments": True}}, name="proxy-audit-symlink") as (base, _proc, log):
        link.symlink_to(target)
        sid = init_ui(base, ALICE)
        assert "result" in call(base, ALICE, sid, "get_current_weather", city="Oslo"), "the call is not held up by the trail"
        wait_for_log(log, "write_failed")
        assert "symbolic link" in log.read_text()
        assert target.read_text() == "", "nothing is written through the link"
        assert metric(scrape_with(base, METRICS_TOKEN), "mcp_gen_ui_audit_lines_total", outcome="dropped") >= 1
    audit = tmp_path / "real.jsonl"
    with token_proxy(tmp_path, TOKENS, config={"audit": {"file": str(audit), "arguments": True}}, name="proxy-audit-args") as (base, _proc, _log):
        sid = init_ui(base, ALICE)
        call(base, ALICE, sid, "get_current_weather", city="Oslo")
        line = wait_for(lambda: next((json.loads(x) for x in audit.read_text().splitlines() if '"tool_call"' in x), None), 10,
                        "the call's line in the trail")
        assert line["args"] == {"city": "Oslo"} and len(line["args_sha256"]) == 64


def test_required_refuses_calls_while_the_trail_cannot_be_written_and_a_full_sink_costs_nothing(tmp_path):
    # /dev/full takes nothing: with audit.required, calls are refused, and say why.
    with token_proxy(tmp_path, TOKENS, config={"audit": {"file": "/dev/full", "required": True}}, name="proxy-audit-required") as (base, _proc, _log):
        sid = init_ui(base, ALICE)  # its session_open line fails: the trail is unwritable from then on
        deadline = time.time() + 10
        while time.time() < deadline:
            answer = call(base, ALICE, sid, "get_current_weather", city="Oslo")
            if "error" in answer:
                break
            time.sleep(0.1)
        assert "audit trail cannot be written" in answer["error"]["message"] and "audit.required" in answer["error"]["message"], answer
        # Deliberately past a retry (no condition to wait for: nothing changes): the writer tries
        # the kept lines again each second, /dev/full still takes nothing, and calls stay refused.
        time.sleep(1.5)
        assert all("error" in call(base, ALICE, sid, "get_current_weather", city="Oslo") for _ in range(5)), "refused while unwritable"
        samples = scrape_with(base, METRICS_TOKEN)
        assert metric(samples, "mcp_gen_ui_refusals_total", reason="audit_unavailable") >= 6
        assert metric(samples, "mcp_gen_ui_audit_lines_total", outcome="dropped") == 0, "required: kept, not dropped"
    # Without required, the same sink drops lines (counted) and calls go on.
    with token_proxy(tmp_path, TOKENS, config={"audit": {"file": "/dev/full"}}, name="proxy-audit-best-effort") as (base, _proc, _log):
        sid = init_ui(base, ALICE)
        assert all("result" in call(base, ALICE, sid, "get_current_weather", city="Oslo") for _ in range(20))
        wait_for(lambda: metric(scrape_with(base, METRICS_TOKEN), "mcp_gen_ui_audit_lines_total", outcome="dropped") >= 20, 10,
                 "the 20 calls' lines counted as dropped")
    # stdout nobody reads: the writer blocks on the pipe, the queue fills, the rest is dropped and
    # counted; every call is still answered.
    with token_proxy(tmp_path, TOKENS, config={"audit": {"stdout": True, "queue": 50}}, name="proxy-audit-stuck") as (base, _proc, _log):
        sid = init_ui(base, ALICE)
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda n: call(base, ALICE, sid, "get_current_weather", city=f"City {n}"), range(600)))
        assert all("result" in a for a in answers), "every call is answered"
        samples = scrape_with(base, METRICS_TOKEN)
        assert metric(samples, "mcp_gen_ui_audit_lines_total", outcome="dropped") > 0


def test_hosts_are_told_to_list_again_when_the_rules_change(tmp_path):
    rules = {"default": "allow", "rules": [{"name": "no maps", "tools": ["get_weather_map"], "effect": "deny"}]}
    with token_proxy(tmp_path, TOKENS, config={"policy": rules}, name="proxy-policy-notify") as (base, proc, log):
        conn, resp, endpoint = open_sse(base, BOB)
        try:
            request(base + endpoint, "POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "sse", "version": "1"}}}, token=BOB)
            sse_answers(resp, {1})
            cfg_path = tmp_path / "auth.json"
            cfg = json.loads(cfg_path.read_text())
            cfg["policy"]["rules"] = []
            cfg_path.write_text(json.dumps(cfg))
            os.kill(proc.p.pid, 1)
            seen = threading.Event()

            def read():
                while not seen.is_set():
                    line = resp.fp.readline().decode()
                    if "notifications/tools/list_changed" in line:
                        seen.set()

            threading.Thread(target=read, daemon=True).start()
            assert seen.wait(15), "no tools/list_changed after the rules changed"
        finally:
            conn.close()

"""Issue 10, limits: what one host, or all hosts together, may use. Each refusal is clear, counted
in mcp_gen_ui_refusals_total{reason}, and leaves other sessions working."""

import json
import sys
import threading
import time
from pathlib import Path

import anyio
import urllib.error
import urllib.request

from conftest import metric, proxy_http, scrape
from fake_llm import page
from mcpclient import session
from test_generation import gen_proxy

RECORDER = str(Path(__file__).with_name("recording_upstream.py"))
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def config(tmp_path, limits: dict) -> str:
    p = tmp_path / f"limits-{time.time_ns()}.json"
    p.write_text(json.dumps({"limits": limits}))
    return str(p)


class Reply:
    def __init__(self, status: int, headers, body: bytes):
        self.status_code, self.headers, self.text = status, {k.lower(): v for k, v in headers.items()}, body.decode()

    def json(self):
        return json.loads(self.text)


def http(method: str, url: str, body=None, headers=None, timeout=30) -> Reply:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return Reply(r.status, r.headers, r.read())
    except urllib.error.HTTPError as e:
        return Reply(e.code, e.headers, e.read())


def initialize(base: str) -> Reply:
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "limits-test", "version": "1"}}}
    return http("POST", base + "/mcp", body, HEADERS)


def open_session(base: str) -> str:
    r = initialize(base)
    assert r.status_code == 200, r.text
    sid = r.headers["mcp-session-id"]
    http("POST", base + "/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"}, {**HEADERS, "mcp-session-id": sid})
    return sid


def call(base: str, sid: str, rid, name: str, args: dict) -> dict:
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": args}}
    return http("POST", base + "/mcp", body, {**HEADERS, "mcp-session-id": sid}).json()


def test_max_sessions_refuses_new_sessions_only(tmp_path):
    upstream = ["--upstream", f"{sys.executable} {RECORDER} {tmp_path / 'up.jsonl'}"]
    with proxy_http([*upstream, "--config", config(tmp_path, {"maxSessions": 3})], name="proxy-max-sessions") as (base, _):
        sids = [open_session(base) for _ in range(3)]
        refused = initialize(base)
        assert refused.status_code == 503, refused.text
        assert refused.headers.get("retry-after") == "5"
        err = refused.json()["error"]
        assert err["code"] == -32004 and "limits.maxSessions" in err["message"], err
        sse = http("GET", base + "/sse", headers={"accept": "text/event-stream"})
        assert sse.status_code == 503, "legacy SSE sessions count against the same limit"
        # Sessions already open are untouched.
        answer = call(base, sids[0], 1, "meta", {})
        assert answer["result"]["structuredContent"] == {"a": [1, 2]}, answer
        # Closing one makes room for one.
        assert http("DELETE", base + "/mcp", headers={"mcp-session-id": sids[1]}).status_code == 200
        deadline = time.time() + 10
        while initialize(base).status_code != 200:
            assert time.time() < deadline, "a closed session's place was never given back"
            time.sleep(0.1)
        assert metric(scrape(base), "mcp_gen_ui_refusals_total", reason="max_sessions") >= 2


def test_max_in_flight_per_session_refuses_at_once_and_spares_others(tmp_path):
    upstream = ["--upstream", f"{sys.executable} {RECORDER} {tmp_path / 'up.jsonl'}"]
    cfg = config(tmp_path, {"maxInFlightPerSession": 2})
    with proxy_http([*upstream, "--config", cfg], name="proxy-max-in-flight") as (base, _):
        a, b = open_session(base), open_session(base)
        slow_answers = []

        def slow(rid):
            slow_answers.append(call(base, a, rid, "slow", {"seconds": 3}))

        threads = [threading.Thread(target=slow, args=(i,)) for i in (1, 2)]
        for t in threads:
            t.start()
        time.sleep(0.7)  # both are in flight upstream now
        started = time.monotonic()
        third = call(base, a, 3, "meta", {})
        assert time.monotonic() - started < 1.0, "the refusal comes at once, not after a wait"
        assert third["error"]["code"] == -32004 and "limits.maxInFlightPerSession" in third["error"]["message"], third
        other = call(base, b, 1, "meta", {})
        assert "result" in other, f"another session is not limited by this one: {other}"
        for t in threads:
            t.join(timeout=15)
        assert [x["result"]["content"][0]["text"] for x in slow_answers] == ["slow done", "slow done"]
        again = call(base, a, 4, "meta", {})
        assert "result" in again, "once answers came back, the session may send again"
        assert metric(scrape(base), "mcp_gen_ui_refusals_total", reason="max_in_flight") == 1


def test_llm_calls_per_minute_limits_refine_and_regenerate_per_principal(fake, tmp_path):
    """The allowance is a principal's, not a session's: opening another session does not
    reset it (issue 23). Without auth everyone is one principal; two principals apart are in
    test_teams.py."""
    fake.default = {"html": page("LIMITED-PAGE")}

    async def go(base):
        async with session("mcp", base) as a, session("mcp", base) as b:
            out = []
            for _ in range(3):
                r = await a.call_tool("_ui_regenerate", {"toolName": "get_forecast"})
                out.append((r.is_error, r.content[0].text))
            other = await b.call_tool("_ui_refine", {"toolName": "get_forecast", "feedback": "bigger numbers"})
            read = await a.read_resource("ui://get_current_weather")
            return out, other, read

    with gen_proxy(fake, "openai", config={"limits": {"llmCallsPerMinute": 2}}, name="proxy-llm-limit", tmp_path=tmp_path) as (base, _):
        out, other, read = anyio.run(go, base)
        assert [e for e, _ in out] == [False, False, True], out
        assert "limits.llmCallsPerMinute" in out[2][1] and "retry in" in out[2][1], out[2][1]
        assert other.is_error and "limits.llmCallsPerMinute" in other.content[0].text, "another session of the same principal shares it"
        assert "LIMITED-PAGE" in read.contents[0].text, "plain ui:// reads are not limited"
        assert metric(scrape(base), "mcp_gen_ui_refusals_total", reason="llm_calls_per_minute") == 2


def test_limits_config_errors_name_the_field(tmp_path):
    import subprocess

    from conftest import BIN

    for limits, field in (({"maxSessions": 0}, "limits.maxSessions"), ({"maxInFlightPerSession": 0}, "limits.maxInFlightPerSession")):
        r = subprocess.run([str(BIN), "--demo", "--config", config(tmp_path, limits)], capture_output=True, text=True, timeout=20)
        assert r.returncode == 2 and field in r.stderr, (limits, r.stderr)


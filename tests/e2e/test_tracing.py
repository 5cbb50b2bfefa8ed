"""Issue 22 acceptance: OpenTelemetry traces exported over OTLP/HTTP to a real receiver that
decodes them with the official protobuf definitions (otlp_receiver.py), propagation of W3C
trace context both ways (HTTP headers and `params._meta`), the GenAI attributes of the LLM
span, and a collector that is down or stuck costing the service nothing but counted drops."""

import json
import os
import secrets
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import BIN, metric, proxy_http, proxy_rss_kb, scrape
from fake_llm import page
from http_upstream import HttpUpstream
from otlp_receiver import OtlpReceiver

RECORDER = str(Path(__file__).with_name("recording_upstream.py"))
UI = {"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}}


def otel_env(receiver_endpoint: str, **extra) -> dict:
    # A short schedule so spans arrive within the test, not after the SDK's default 5 s.
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver_endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100", **extra}


def new_parent() -> tuple[str, str, str]:
    """(trace id, span id, traceparent) of a sampled caller span."""
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return trace_id, span_id, f"00-{trace_id}-{span_id}-01"


class Host:
    """A bare Streamable HTTP host: raw POSTs, so the test chooses every header."""

    def __init__(self, base: str, caps: dict | None = None):
        self.base, self.session = base, None
        init = {"protocolVersion": "2025-06-18", "capabilities": caps or {}, "clientInfo": {"name": "trace-test", "version": "1"}}
        self.call("initialize", init)
        self.notify("notifications/initialized")
        self.ids = iter(range(2, 10**6))

    def post(self, body: dict, headers: dict | None = None) -> tuple[int, dict, list]:
        h = {"content-type": "application/json", "accept": "application/json, text/event-stream", **(headers or {})}
        if self.session:
            h["mcp-session-id"] = self.session
        req = urllib.request.Request(self.base + "/mcp", data=json.dumps(body).encode(), headers=h, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                status, rh, text = r.status, dict(r.headers), r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), [json.loads(e.read().decode() or "null")]
        self.session = self.session or rh.get("mcp-session-id") or rh.get("Mcp-Session-Id")
        if "text/event-stream" in rh.get("Content-Type", rh.get("content-type", "")):
            msgs = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]
        else:
            msgs = [json.loads(text)] if text.strip() else []
        return status, rh, msgs

    def call(self, method: str, params: dict, headers: dict | None = None, rid=1) -> dict:
        status, _, msgs = self.post({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, headers)
        answers = [m for m in msgs if m and m.get("id") == rid]
        assert answers, f"{method}: HTTP {status}, {msgs}"
        return answers[0]

    def notify(self, method: str):
        self.post({"jsonrpc": "2.0", "method": method})

    def next_id(self) -> int:
        return next(self.ids)


def by_name(spans: list[dict], name: str) -> dict:
    found = [s for s in spans if s["name"] == name]
    assert found, f"no span {name!r} among {[s['name'] for s in spans]}"
    return found[0]


def test_a_call_with_traceparent_is_one_trace_to_the_http_upstream(tmp_path):
    receiver = OtlpReceiver()
    try:
        with HttpUpstream() as up, proxy_http(["--upstream-url", up.url], name="proxy-trace-http",
                                              env=otel_env(receiver.endpoint, OTEL_SERVICE_NAME="gw-under-test",
                                                           OTEL_RESOURCE_ATTRIBUTES="deployment.environment=test")) as (base, _):
            host = Host(base)
            trace_id, caller_span, tp = new_parent()
            rid = host.next_id()
            answer = host.call("tools/call", {"name": "echo", "arguments": {}}, {"traceparent": tp, "x-request-id": "req-trace-1"}, rid)
            assert "result" in answer, answer

            spans = receiver.wait_for(lambda s: any(x["trace_id"] == trace_id and x["kind"] == "client" for x in s))
            spans = receiver.trace(trace_id)
            http = by_name(spans, "POST /mcp")
            assert http["kind"] == "server" and http["parent"] == caller_span, "the HTTP span is the caller's child"
            assert http["attrs"]["http.response.status_code"] == 200
            assert http["attrs"]["mcp_gen_ui.request_id"] == "req-trace-1", "the log's request id is on the spans"
            mcp = [s for s in spans if s["name"] == "tools/call echo" and s["kind"] == "server"][0]
            assert mcp["parent"] == http["span_id"]
            assert mcp["attrs"]["mcp.method.name"] == "tools/call"
            assert mcp["attrs"]["gen_ai.tool.name"] == "echo"
            assert mcp["attrs"]["jsonrpc.request.id"] == str(rid)
            assert mcp["attrs"]["mcp.protocol.version"] == "2025-06-18"
            assert mcp["attrs"]["mcp.session.id"] and mcp["attrs"]["mcp.session.id"] not in (host.session or "")
            upstream = [s for s in spans if s["name"] == "tools/call echo" and s["kind"] == "client"][0]
            assert upstream["parent"] == mcp["span_id"]
            assert upstream["attrs"]["mcp_gen_ui.upstream.transport"] == "streamable-http"
            assert upstream["attrs"]["network.transport"] == "tcp"
            assert spans[0]["resource"]["service.name"] == "gw-under-test"
            assert spans[0]["resource"]["deployment.environment"] == "test"

            # The upstream got the trace as a header and in _meta, with our client span as parent.
            calls = [(h, m) for h, (_, m) in zip(up.post_headers, up.arrivals) if m.get("method") == "tools/call"]
            headers, msg = calls[-1]
            want = f"00-{trace_id}-{upstream['span_id']}-01"
            assert headers.get("traceparent") == want, headers
            assert msg["params"]["_meta"]["traceparent"] == want, msg

            # A failed call is on its span: a JSON-RPC error with its code, a tool error as such.
            t_bad, _, tp_bad = new_parent()
            bad = host.call("tools/call", {"name": "no_such_tool", "arguments": {}}, {"traceparent": tp_bad}, host.next_id())
            assert "error" in bad or bad["result"].get("isError"), bad
            receiver.wait_for(lambda s: any(x["trace_id"] == t_bad and x["kind"] == "server" and x["name"].startswith("tools/call") for x in s))
            failed = [s for s in receiver.trace(t_bad) if s["kind"] == "server" and s["name"].startswith("tools/call")][0]
            # A tool name nobody has stays out of span names (collectors index them).
            assert failed["name"] == "tools/call" and failed["attrs"]["gen_ai.tool.name"] == "no_such_tool", failed
            if "error" in bad:
                assert failed["attrs"]["rpc.response.status_code"] == str(bad["error"]["code"]) and failed["status"] == 2, failed
            else:
                assert failed["attrs"]["error.type"] == "tool_error", failed
    finally:
        receiver.stop()


def test_a_cold_page_read_traces_the_generation_and_each_llm_request(fake, tmp_path):
    receiver = OtlpReceiver()
    fake.default = {"html": page("TRACED-PAGE"), "delay": 1.0}
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"generation": {"timeoutMs": 15000}}))
    env = {"OPENAI_API_KEY": "sk-test", **otel_env(receiver.endpoint)}
    args = ["--demo", "--provider", "openai", "--llm-base-url", fake.base("openai"), "--config", str(cfg), "--log-format", "json"]
    try:
        with proxy_http(args, name="proxy-trace-llm", env=env) as (base, proc):
            first, second = Host(base, UI), Host(base, UI)
            (t1, s1, tp1), (t2, _, tp2) = new_parent(), new_parent()
            results = {}

            def read(host, tp, key):
                results[key] = host.call("resources/read", {"uri": "ui://get_current_weather"}, {"traceparent": tp}, host.next_id())

            a = threading.Thread(target=read, args=(first, tp1, "a"))
            a.start()
            time.sleep(0.3)  # the second read joins the generation the first started
            b = threading.Thread(target=read, args=(second, tp2, "b"))
            b.start()
            a.join(30)
            b.join(30)
            assert "TRACED-PAGE" in results["a"]["result"]["contents"][0]["text"]
            assert "TRACED-PAGE" in results["b"]["result"]["contents"][0]["text"]

            receiver.wait_for(lambda s: any(x["trace_id"] == t1 and x["name"].startswith("chat ") for x in s)
                              and any(x["trace_id"] == t2 and x["name"] == "ui.page.wait" for x in s))
            spans = receiver.trace(t1)
            read_span = [s for s in spans if s["name"] == "resources/read" and s["kind"] == "server"][0]
            assert read_span["parent"] == by_name(spans, "POST /mcp")["span_id"] and by_name(spans, "POST /mcp")["parent"] == s1
            assert read_span["attrs"]["mcp.resource.uri"] == "ui://get_current_weather"
            gen = by_name(spans, "ui.page.generate get_current_weather")
            assert gen["parent"] == read_span["span_id"], "a generation a read started is that read's child"
            assert gen["attrs"]["mcp_gen_ui.cache.hit"] is False
            assert gen["attrs"]["mcp_gen_ui.outcome"] == "generated"
            assert gen["attrs"]["mcp_gen_ui.repairs"] == 0
            chats = [s for s in spans if s["name"].startswith("chat ")]
            assert chats and all(c["parent"] == gen["span_id"] and c["kind"] == "client" for c in chats)
            chat = chats[-1]
            assert chat["attrs"]["gen_ai.operation.name"] == "chat"
            assert chat["attrs"]["gen_ai.provider.name"] == "openai"
            assert chat["attrs"]["gen_ai.request.model"]
            assert chat["attrs"]["gen_ai.usage.input_tokens"] == 120
            assert chat["attrs"]["gen_ai.usage.output_tokens"] in [r["output_tokens"] for r in fake.requests], "the usage the stream reported"
            # The provider got the LLM span as its parent.
            sent = [r["headers"] for r in fake.requests if r["kind"] == "generate"][-1]
            assert {k.lower(): v for k, v in sent.items()}["traceparent"] == f"00-{t1}-{chat['span_id']}-01"

            # The second read joined the first's generation: its wait links to it.
            wait = by_name(receiver.trace(t2), "ui.page.wait")
            assert {"trace_id": t1, "span_id": gen["span_id"]} in wait["links"]
            assert len(fake.generations()) == 1

            # The trace id is in the log lines of the request.
            logs = [json.loads(line) for line in proc.log_path.read_text().splitlines() if line.startswith("{")]
            tagged = [entry for entry in logs if entry.get("trace_id") == t1]
            events = {entry.get("event") for entry in tagged}
            assert {"request_done", "cache_miss"} <= events, events
            assert all(entry.get("requestId") for entry in tagged if entry.get("event") in ("request_done", "cache_miss"))

            # A failing LLM request carries error.type.
            fake.script = [{"status": 400, "type": "invalid_request_error", "message": "bad"}]
            t3, _, tp3 = new_parent()
            regen = first.call("tools/call", {"name": "_ui_regenerate", "arguments": {"toolName": "get_current_weather"}}, {"traceparent": tp3}, first.next_id())
            assert "result" in regen and not regen["result"].get("isError"), regen
            receiver.wait_for(lambda s: any(x["trace_id"] == t3 and x["name"].startswith("ui.page.generate") for x in s))
            failed = [s for s in receiver.trace(t3) if s["name"].startswith("chat ") and "error.type" in s["attrs"]]
            assert failed and failed[0]["attrs"]["error.type"] == "INVALID_REQUEST" and failed[0]["status"] == 2, receiver.trace(t3)
            assert by_name(receiver.trace(t3), "ui.page.generate get_current_weather")["attrs"]["mcp_gen_ui.fallback.reason"]
    finally:
        receiver.stop()


def test_stdio_host_and_stdio_upstream_carry_the_trace_in_meta(tmp_path):
    receiver = OtlpReceiver()
    log = tmp_path / "upstream.jsonl"
    env = {**os.environ, **otel_env(receiver.endpoint)}
    p = subprocess.Popen([str(BIN), "--transport", "stdio", "--upstream", f"{sys.executable} {RECORDER} {log}"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        def send(msg):
            p.stdin.write(json.dumps(msg) + "\n")
            p.stdin.flush()

        def answer(rid):
            while True:
                line = p.stdout.readline()
                assert line, "the proxy closed stdout"
                m = json.loads(line)
                if m.get("id") == rid:
                    return m

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        answer(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        trace_id, caller_span, tp = new_parent()
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "meta", "arguments": {}, "_meta": {"traceparent": tp, "tracestate": "vendor=1"}}})
        assert "result" in answer(2)

        receiver.wait_for(lambda s: any(x["trace_id"] == trace_id and x["kind"] == "client" for x in s))
        spans = receiver.trace(trace_id)
        mcp = [s for s in spans if s["kind"] == "server"][0]
        assert mcp["parent"] == caller_span, "a stdio host's _meta.traceparent is the parent"
        assert mcp["attrs"]["network.transport"] == "pipe"
        client = [s for s in spans if s["kind"] == "client"][0]
        sent = [json.loads(line) for line in log.read_text().splitlines()]
        call = [m for m in sent if m.get("method") == "tools/call"][-1]
        assert call["params"]["_meta"]["traceparent"] == f"00-{trace_id}-{client['span_id']}-01"
        assert call["params"]["_meta"]["tracestate"] == "vendor=1"
        assert client["attrs"]["mcp_gen_ui.upstream.transport"] == "stdio"
    finally:
        p.stdin.close()
        p.wait(10)
        receiver.stop()


def test_unsampled_callers_and_bad_traceparents_export_nothing_of_theirs():
    receiver = OtlpReceiver()
    try:
        with HttpUpstream() as up, proxy_http(["--upstream-url", up.url], name="proxy-trace-sampling", env=otel_env(receiver.endpoint)) as (base, _):
            host = Host(base)
            unsampled_trace, _, tp = new_parent()
            host.call("tools/call", {"name": "echo", "arguments": {}}, {"traceparent": tp[:-2] + "00"}, host.next_id())
            # A malformed one starts a new trace rather than failing the call.
            ok = host.call("tools/call", {"name": "echo", "arguments": {}}, {"traceparent": "00-zz-not-hex-01", "x-request-id": "bad-tp"}, host.next_id())
            assert "result" in ok
            root = receiver.wait_for(lambda s: any(x["attrs"].get("mcp_gen_ui.request_id") == "bad-tp" and x["kind"] == "server" for x in s))
            root = [x for x in root if x["attrs"].get("mcp_gen_ui.request_id") == "bad-tp" and x["name"] == "POST /mcp"][0]
            assert root["parent"] == "" and len(root["trace_id"]) == 32 and root["trace_id"] != "0" * 32, root
            marker, _, tp2 = new_parent()
            host.call("tools/call", {"name": "echo", "arguments": {}}, {"traceparent": tp2}, host.next_id())
            receiver.wait_for(lambda s: any(x["trace_id"] == marker for x in s))
            time.sleep(0.3)
            assert receiver.trace(unsampled_trace) == [], "a caller's unsampled flag is honoured (parent-based sampler)"
            # The unsampled call still passed its trace on, unsampled.
            calls = [h for h, (_, m) in zip(up.post_headers, up.arrivals) if m.get("method") == "tools/call"]
            assert calls[0]["traceparent"].startswith(f"00-{unsampled_trace}-") and calls[0]["traceparent"].endswith("-00")
    finally:
        receiver.stop()


def test_export_headers_reach_the_collector_and_never_the_logs():
    receiver = OtlpReceiver()
    secret = "sekret-" + secrets.token_hex(8)
    env = otel_env(receiver.endpoint, OTEL_EXPORTER_OTLP_HEADERS=f"x-api-key={secret},x-team=a%20b")
    try:
        with HttpUpstream() as up, proxy_http(["--upstream-url", up.url, "--log-level", "debug"], name="proxy-trace-headers", env=env) as (base, proc):
            Host(base).call("tools/call", {"name": "echo", "arguments": {}}, {"traceparent": new_parent()[2]}, 5)
            receiver.wait_for(lambda s: len(s) > 0)
            assert receiver.exports[0]["headers"]["x-api-key"] == secret
            assert receiver.exports[0]["headers"]["x-team"] == "a b"
        assert secret not in proc.log_path.read_text()
    finally:
        receiver.stop()


def test_bad_trace_settings_stop_the_start_naming_the_variable():
    for env, field in [({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_PROTOCOL"),
                       ({"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}, "OTEL_TRACES_SAMPLER_ARG"),
                       ({"OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, "OTEL_EXPORTER_OTLP_HEADERS")]:
        full = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", **env}
        r = subprocess.run([str(BIN), "--demo", "--listen", "127.0.0.1:0"], env=full, capture_output=True, text=True, timeout=20)
        assert r.returncode == 2, r.stderr
        assert field in r.stderr, r.stderr


@pytest.mark.parametrize("collector", ["down", "stuck"])
def test_a_collector_down_or_stuck_costs_nothing_but_counted_drops(collector):
    receiver = OtlpReceiver()
    if collector == "down":
        receiver.stop()  # the port is closed: every export fails
    else:
        receiver.hang = True  # exports are taken in and never answered
    env = otel_env(receiver.endpoint, OTEL_BSP_MAX_QUEUE_SIZE="64", OTEL_BSP_MAX_EXPORT_BATCH_SIZE="16", OTEL_EXPORTER_OTLP_TIMEOUT="60000")
    try:
        with HttpUpstream() as up, proxy_http(["--upstream-url", up.url], name=f"proxy-trace-{collector}", env=env) as (base, proc):
            host = Host(base)
            for _ in range(50):  # warm up, then measure
                assert "result" in host.call("tools/call", {"name": "echo", "arguments": {}}, None, host.next_id())
            rss_before = proxy_rss_kb(proc.p.pid)
            for _ in range(1500):
                assert "result" in host.call("tools/call", {"name": "echo", "arguments": {}}, {"traceparent": new_parent()[2]}, host.next_id())
            rss_after = proxy_rss_kb(proc.p.pid)
            time.sleep(0.5)
            samples = scrape(base)
            reason = "export_failed" if collector == "down" else "queue_full"
            dropped = metric(samples, "mcp_gen_ui_trace_spans_dropped_total", reason=reason)
            total = dropped + metric(samples, "mcp_gen_ui_trace_spans_dropped_total", reason="queue_full" if collector == "down" else "export_failed")
            # Each call made 3 spans (HTTP, MCP, upstream): 4,650 in all. Every one is dropped and
            # counted but what the queue (64) and the export in flight (16) can hold: nothing
            # piles up anywhere.
            assert dropped > 1000 and total >= 3 * 1550 - 64 - 16 - 3, samples
            assert rss_after - rss_before < 16 * 1024, f"memory grew {rss_after - rss_before} kB with the collector {collector}"
            assert urllib.request.urlopen(base + "/healthz", timeout=5).status == 200
    finally:
        receiver.stop()


def test_tracing_off_adds_nothing_to_what_upstreams_receive():
    """Without an endpoint nothing is traced, and upstreams get what the host sent: no header
    of ours, and a host's own _meta trace context unchanged."""
    with HttpUpstream() as up, proxy_http(["--upstream-url", up.url], name="proxy-trace-off") as (base, proc):
        host = Host(base)
        _, _, tp = new_parent()
        host.call("tools/call", {"name": "echo", "arguments": {}}, {"traceparent": tp}, host.next_id())
        own = {"traceparent": new_parent()[2], "tracestate": "host=1"}
        host.call("tools/call", {"name": "echo", "arguments": {}, "_meta": own}, None, host.next_id())
        calls = [(h, m) for h, (_, m) in zip(up.post_headers, up.arrivals) if m.get("method") == "tools/call"]
        assert all("traceparent" not in h and "tracestate" not in h for h, _ in calls), calls
        assert "_meta" not in calls[0][1]["params"], calls[0][1]
        assert calls[1][1]["params"]["_meta"] == own
        assert "trace_id" not in proc.log_path.read_text()


def test_a_bad_tracestate_from_a_host_never_breaks_the_llm_request(fake, tmp_path):
    """The propagator takes control characters in tracestate values; such a value must not
    reach a header (it would fail every LLM request of the generation it started)."""
    receiver = OtlpReceiver()
    fake.default = {"html": page("STATE-PAGE")}
    env = {"OPENAI_API_KEY": "sk-test", **otel_env(receiver.endpoint)}
    try:
        with proxy_http(["--demo", "--provider", "openai", "--llm-base-url", fake.base("openai")], name="proxy-trace-state", env=env) as (base, _):
            host = Host(base, UI)
            trace_id, _, tp = new_parent()
            meta = {"traceparent": tp, "tracestate": "a=b\u0001c,vendor=ok"}
            read = host.call("resources/read", {"uri": "ui://get_current_weather", "_meta": meta}, None, host.next_id())
            assert "STATE-PAGE" in read["result"]["contents"][0]["text"], read
            sent = {k.lower(): v for k, v in [r["headers"] for r in fake.requests if r["kind"] == "generate"][-1].items()}
            assert sent["traceparent"].startswith(f"00-{trace_id}-") and "tracestate" not in sent, sent
    finally:
        receiver.stop()


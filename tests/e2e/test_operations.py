"""Issue 6 acceptance: metrics after a scripted session, the dashboard's metrics exist, the
deploy files pass their tools, one request id followed through JSON logs, and SIGTERM during
a generation."""

import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import anyio

from conftest import BIN, metric as v, scrape as samples
from fake_llm import page
from mcpclient import session
from test_generation import gen_proxy
from test_supervision import upstream_pid

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"






def test_metrics_after_a_scripted_session(fake, tmp_path):
    fake.script = [{"html": page("FORECAST")}, {"status": 400, "type": "invalid_request_error"}]
    with gen_proxy(fake, "openai", name="proxy-ops-metrics", tmp_path=tmp_path) as (base, proc):
        async def scripted():
            async with session("mcp", base) as s:
                for city in ["Oslo", "Lima"]:
                    await s.call_tool("get_current_weather", {"city": city})
                await s.call_tool("get_forecast", {"city": "Oslo", "days": 20})  # a tool error is still an ok call
                await s.read_resource("ui://get_forecast")  # cold
                await s.read_resource("ui://get_forecast")  # warm
                await s.read_resource("ui://set_units")  # the provider fails: fallback
                os.kill(upstream_pid(proc.p.pid), signal.SIGKILL)
                for _ in range(100):
                    try:
                        await s.call_tool("get_current_weather", {"city": "Pune"})
                        break
                    except Exception:
                        await anyio.sleep(0.1)
                return samples(base)

        m = anyio.run(scripted)
    assert v(m, "mcp_gen_ui_requests_total", method="tools/call", outcome="ok") >= 4
    assert v(m, "mcp_gen_ui_requests_total", method="resources/read", outcome="ok") == 3
    assert v(m, "mcp_gen_ui_upstream_call_duration_seconds_count", method="tools/call") >= 4
    assert v(m, "mcp_gen_ui_upstream_restarts_total") == 1
    assert v(m, "mcp_gen_ui_upstream_connected") == 1
    assert v(m, "mcp_gen_ui_host_sessions", transport="streamable-http") == 1
    assert v(m, "mcp_gen_ui_cache_hits_total") == 1 and v(m, "mcp_gen_ui_cache_misses_total") == 2
    assert v(m, "mcp_gen_ui_cache_entries") == 2 and v(m, "mcp_gen_ui_cache_bytes") > 1000
    assert v(m, "mcp_gen_ui_fallbacks_total", reason="INVALID_REQUEST") == 1
    assert v(m, "mcp_gen_ui_llm_requests_total", provider="openai", model="gpt-4.1", outcome="ok") == 3  # 2 classify + 1 generate
    assert v(m, "mcp_gen_ui_llm_requests_total", provider="openai", model="gpt-4.1", outcome="INVALID_REQUEST") == 1
    assert v(m, "mcp_gen_ui_llm_tokens_total", provider="openai", model="gpt-4.1", direction="output") == fake.output_tokens()
    kinds = {dict(k[1]).get("outcome") for k in m if k[0] == "mcp_gen_ui_generation_duration_seconds_count" and dict(k[1]).get("tool") == "get_forecast"}
    assert kinds & {"generated", "repaired"}
    assert v(m, "mcp_gen_ui_generation_duration_seconds_count", tool="set_units", outcome="template") == 1
    assert v(m, "mcp_gen_ui_generations_in_flight") == 0 and v(m, "mcp_gen_ui_generations_queued") == 0
    assert v(m, "mcp_gen_ui_ui_reads_total", kind="template") == 1
    assert any(k[0] == "mcp_gen_ui_build_info" for k in m)
    assert all(dict(k[1]).get("tool") in (None, "get_forecast", "set_units", "get_current_weather") for k in m), "tool labels only for the upstream's tools"
    # By tool (issue 61): the weather calls ok, the forecast's tool error as one, each timed.
    assert v(m, "mcp_gen_ui_tool_calls_total", server="default", tool="get_current_weather", outcome="ok") >= 3
    assert v(m, "mcp_gen_ui_tool_calls_total", server="default", tool="get_forecast", outcome="tool_error") == 1
    assert v(m, "mcp_gen_ui_tool_call_duration_seconds_count", server="default", tool="get_forecast") == 1


async def _one_read(base):
    async with session("mcp", base) as s:
        await s.read_resource("ui://get_forecast")
        await s.call_tool("get_current_weather", {"city": "Oslo"})  # the tool series appear with a call


def exported_names(base) -> set:
    text = urllib.request.urlopen(base + "/metrics").read().decode()
    return {re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0) for line in text.splitlines() if line and not line.startswith("#")}


def test_dashboard_queries_use_exported_metrics(fake, tmp_path):
    dash = json.loads((DEPLOY / "grafana" / "dashboards" / "mcp-gen-ui.json").read_text())
    used = {name for p in dash["panels"] for t in p["targets"] for name in re.findall(r"mcp_gen_ui_[a-z_]+", t["expr"])}
    assert len(used) >= 10
    with gen_proxy(fake, "openai", name="proxy-dashboard", tmp_path=tmp_path) as (base, _):
        # Series with a tool label exist once the upstream's tools have been seen in use.
        anyio.run(lambda: _one_read(base))
        names = exported_names(base)
    missing = sorted(u for u in used if u not in names)
    assert not missing, f"the dashboard queries metrics the service does not export: {missing}"


def test_prometheus_config_and_compose_file_are_valid():
    out = subprocess.run(["promtool", "check", "config", str(DEPLOY / "prometheus.yml")], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    out = subprocess.run(["docker-compose", "-f", str(DEPLOY / "docker-compose.yml"), "config"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    # Prometheus scrapes the metrics-only address, which needs no token (issue 10); the
    # service's bearer token comes from .env.
    assert "mcp-gen-ui:9464" in (DEPLOY / "prometheus.yml").read_text()
    compose = (DEPLOY / "docker-compose.yml").read_text()
    assert re.search(r"- --metrics-listen\s+- 0\.0\.0\.0:9464", compose), "the compose service serves metrics on :9464"
    assert "MCP_GEN_UI_AUTH_TOKEN: ${MCP_GEN_UI_AUTH_TOKEN:-}" in compose
    assert "MCP_GEN_UI_AUTH_TOKEN=" in (DEPLOY / "example.env").read_text()
    assert "sk-" not in compose


def post_mcp(base, body, sid=None, rid=None):
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if sid:
        headers["Mcp-Session-Id"] = sid
    if rid:
        headers["x-request-id"] = rid
    req = urllib.request.Request(base + "/mcp", data=json.dumps(body).encode(), headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=20) as r:
        return r.headers.get("mcp-session-id"), r.read().decode()


def test_one_request_id_from_the_edge_to_the_llm(fake, tmp_path):
    log = tmp_path / "log.jsonl"
    with gen_proxy(fake, "anthropic", args=["--log-format", "json"], config={"logging": {"file": str(log)}}, name="proxy-logs", tmp_path=tmp_path) as (base, _):
        sid, _ = post_mcp(base, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "clientInfo": {"name": "t", "version": "1"},
                                                                                                   "capabilities": {"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}}}})
        _, body = post_mcp(base, {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "ui://get_forecast"}}, sid, rid="trace-0042")
        assert "GENERATED-PAGE" in body
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    ours = [line for line in lines if line.get("requestId") == "trace-0042"]
    events = [line.get("event") for line in ours]
    for e in ["cache_miss", "llm_call", "generated", "cache_store", "request_done"]:
        assert e in events, f"{e} missing from the request's log lines: {events}"
    assert all({"timestamp", "level", "component", "event"} <= set(line) for line in ours)
    store = next(line for line in ours if line["event"] == "cache_store")
    assert len(store["cache_key"]) == 64 and store["tool_name"] == "get_forecast" and "duration_ms" in store
    assert {(k.lower(), v) for k, v in fake.generations()[0]["headers"].items()} >= {("x-request-id", "trace-0042")}, "sent to the provider"
    assert "sk-test-secret-key-123" not in log.read_text()


def test_sigterm_during_a_generation(fake, tmp_path):
    fake.default = {"html": page("SLOW-BUT-SAVED"), "delay": 2.0}
    cache = tmp_path / "cache"
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"generation": {"timeoutMs": 8000}}))
    proc = subprocess.Popen([str(BIN), "--demo", "--listen", "127.0.0.1:0", "--provider", "openai", "--llm-base-url", fake.base("openai"), "--cache-dir", str(cache), "--config", str(cfg)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "OPENAI_API_KEY": "x"})
    base = re.search(r"listening on (http://\S+)", proc.stdout.readline()).group(1)
    from conftest import wait_http

    wait_http(base + "/readyz")
    child = upstream_pid(proc.pid)

    def read():
        try:
            sid, _ = post_mcp(base, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "clientInfo": {"name": "t", "version": "1"},
                                                                                                       "capabilities": {"extensions": {"io.modelcontextprotocol/ui": {}}}}})
            post_mcp(base, {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "ui://get_forecast"}}, sid)
        except Exception:
            pass

    t = threading.Thread(target=read, daemon=True)
    t.start()
    deadline = time.time() + 5
    while not fake.generations() and time.time() < deadline:
        time.sleep(0.05)
    assert fake.generations(), "the generation started"
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=10)
    took = time.monotonic() - t0
    assert code == 0, proc.stderr.read()
    assert took < 10, f"took {took:.1f}s to exit"
    files = list(cache.glob("*.json"))
    assert any("SLOW-BUT-SAVED" in f.read_text() for f in files), "the page made during shutdown was persisted"
    time.sleep(0.2)
    assert not Path(f"/proc/{child}").exists() or "zombie" in Path(f"/proc/{child}/status").read_text().lower(), "the upstream child was left running"

"""Acceptance 5: /metrics parses as Prometheus text and counts what happened."""


import anyio

from conftest import metric as value, open_session_stream, proxy_http, scrape
from mcpclient import session




async def scripted(base):
    async with session("mcp", base) as s:
        for city in ["Oslo", "Lima", "Pune"]:
            await s.call_tool("get_current_weather", {"city": city})
        await s.call_tool("get_forecast", {"city": "Oslo", "days": 3})
        await s.read_resource("ui://get_forecast")
        try:
            await s.read_resource("ui://missing")
        except Exception:
            pass
        before = scrape(base)
        assert value(before, "mcp_gen_ui_host_sessions", transport="streamable-http") == 1
    return before


def test_metrics_count_a_scripted_session():
    with proxy_http(["--demo"], name="proxy-metrics") as (base, _):
        during = anyio.run(scripted, base)
        assert value(during, "mcp_gen_ui_requests_total", method="tools/call", outcome="ok") == 4
        assert value(during, "mcp_gen_ui_requests_total", method="resources/read", outcome="ok") == 1
        assert value(during, "mcp_gen_ui_requests_total", method="resources/read", outcome="error") == 1
        assert value(during, "mcp_gen_ui_requests_total", method="initialize", outcome="ok") == 1
        assert value(during, "mcp_gen_ui_upstream_call_duration_seconds_count", method="tools/call") == 4
        assert value(during, "mcp_gen_ui_ui_reads_total", kind="template") == 1
        assert value(during, "mcp_gen_ui_upstream_connected") == 1
        assert value(during, "mcp_gen_ui_upstream_restarts_total") == 0
        # The DELETE at the end of the client session closes it.
        for _ in range(50):
            if value(scrape(base), "mcp_gen_ui_host_sessions", transport="streamable-http") == 0:
                break
            import time

            time.sleep(0.1)
        assert value(scrape(base), "mcp_gen_ui_host_sessions", transport="streamable-http") == 0


def test_closed_sse_sessions_are_reaped(tmp_path):
    import json
    import time

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"server": {"sseKeepaliveSecs": 1}}))

    async def open_and_close(base):
        async with session("sse", base) as s:
            await s.list_tools()
            assert value(scrape(base), "mcp_gen_ui_host_sessions", transport="sse") == 1

    with proxy_http(["--demo", "--config", str(config)], name="proxy-reap") as (base, _):
        anyio.run(open_and_close, base)
        deadline = time.time() + 15
        while value(scrape(base), "mcp_gen_ui_host_sessions", transport="sse") != 0:
            assert time.time() < deadline, "the SSE session was not reaped after its stream closed"
            time.sleep(0.2)


def test_a_host_that_drops_its_stream_is_let_go_at_once(tmp_path):
    """A host that closes its GET stream's socket without DELETE: the stream ends when the
    socket closes, not at a keep-alive write (none comes in this test: every 120 s), so the
    idle session goes within seconds; a second host holding its stream stays."""
    import http.client
    import json
    import time
    from urllib.parse import urlsplit

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"server": {"sseKeepaliveSecs": 120, "sessionIdleTimeoutSecs": 1}}))
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "dropper", "version": "1"}}}

    def open_with_stream(host, port):
        c = http.client.HTTPConnection(host, port, timeout=10)
        c.request("POST", "/mcp", json.dumps(init), headers)
        r = c.getresponse()
        r.read()
        sid = r.getheader("mcp-session-id")
        c.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), {**headers, "Mcp-Session-Id": sid})
        c.getresponse().read()
        c.close()
        # The head and the priming event read: the close below is then a FIN, the orderly close
        # of a host that goes away (unread data would make it a reset, which ends a connection
        # however half-closes are treated).
        s, got = open_session_stream(host, port, sid, until=b"retry: 1000\ndata: \n\n", timeout=10)
        assert got.startswith(b"HTTP/1.1 200") and b"retry: 1000\ndata: \n\n" in got, got
        return sid, s

    def count(base):
        return value(scrape(base), "mcp_gen_ui_host_sessions", transport="streamable-http")

    with proxy_http(["--demo", "--config", str(config)], name="proxy-dropped") as (base, _):
        u = urlsplit(base)
        _, dropped = open_with_stream(u.hostname, u.port)
        kept_sid, kept = open_with_stream(u.hostname, u.port)
        assert count(base) == 2
        dropped.close()
        deadline = time.time() + 12
        while count(base) != 1:
            assert time.time() < deadline, "the session whose host closed its stream was not let go"
            time.sleep(0.2)
        time.sleep(6)  # past the idle limit and a reap: the one with its stream held stays
        assert count(base) == 1, "a session whose stream is held open was reaped"
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
        c.request("DELETE", "/mcp", headers={"Mcp-Session-Id": kept_sid})
        assert c.getresponse().status in (200, 204)
        kept.close()

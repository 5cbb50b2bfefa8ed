"""Acceptance 5: /metrics parses as Prometheus text and counts what happened."""


import anyio

from conftest import metric as value, proxy_http, scrape
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

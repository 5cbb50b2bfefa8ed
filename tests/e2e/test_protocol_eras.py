"""MCP 2025-11-25 and 2026-07-28 on either side of the proxy: a 2x2 matrix of real SDKs.

Hosts: the TypeScript SDK 1.x Client (speaks 2025-11-25; tests/node/era-client.mjs) and the
Python `mcp` 2.x Client in auto mode (speaks 2026-07-28), both over Streamable HTTP. Upstreams
on stdio: server-everything (2025) and a Python 2.x MCPServer (2026; py26_upstream.py). In each
cell the host lists tools (with their UI), reads a ui:// page, calls a tool with progress,
answers an elicitation and cancels a slow call, which the upstream must be told about."""

import contextlib
import json
import shlex
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import anyio
import mcp_types as types
import pytest

from conftest import NODE, ROOT, UI_EXT, Proc, free_port, metric, proxy_http, scrape, upstream_args, wait_port

from mcp import Client
from mcp.client import advertise

PY26_UPSTREAM = Path(__file__).parent / "py26_upstream.py"
ERA_CLIENT = ROOT / "tests" / "node" / "era-client.mjs"
MODERN_LOG = "upstream speaks MCP 2026-07-28"

# What each host does against each upstream; both hosts run the same plan and report alike.
PLANS = {
    "everything": {
        "ui_tool": "trigger-long-running-operation",
        "progress": {"name": "trigger-long-running-operation", "arguments": {"duration": 0.3, "steps": 3}},
        "elicit": {"name": "trigger-elicitation-request", "arguments": {}, "answer": {"name": "Ada"}, "expect": "Name: Ada"},
        # The first progress says it runs; it would go on for a minute, with progress 5 times a
        # second meanwhile (as a busy tool does: the host's hang-up must not get lost in it).
        "slow": {"name": "trigger-long-running-operation", "arguments": {"duration": 60, "steps": 300}},
        "after": {"name": "echo", "arguments": {"message": "still here"}, "expect": "still here"},
    },
    "py26": (py26 := {
        "ui_tool": "count",
        "progress": {"name": "count", "arguments": {"n": 3, "delay": 0.05}},
        "elicit": {"name": "greet", "arguments": {"greeting": "Hello"}, "answer": {"name": "Ada"}, "expect": "Hello, Ada!"},
        "slow": {"name": "count", "arguments": {"n": 300, "delay": 0.2}},
        "after": {"name": "add", "arguments": {"a": 2, "b": 3}, "expect": "5"},
    }),
    # The same server over Streamable HTTP: headers on every POST, cancellation by closing it.
    "py26-http": py26,
}
ERA = {"ts": "2025-11-25", "py": "2026-07-28"}


def ts_host(url: str, plan: dict) -> dict:
    out = subprocess.run([NODE, str(ERA_CLIENT), url, json.dumps({**plan, "ui_ext": UI_EXT})],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"era-client failed: {out.stderr[-3000:]}"
    return json.loads(out.stdout.strip().splitlines()[-1])


async def py_host(url: str, plan: dict) -> dict:
    elicitations = 0

    async def on_elicit(ctx, params):
        nonlocal elicitations
        elicitations += 1
        return types.ElicitResult(action="accept", content=plan["elicit"]["answer"])

    def text(res) -> str:
        return "\n".join(c.text for c in res.content if c.type == "text")

    [(ext_id, ext_settings)] = UI_EXT.items()
    async with Client(url, mode="auto", elicitation_callback=on_elicit, extensions=[advertise(ext_id, ext_settings)]) as c:
        report = {"protocolVersion": c.protocol_version}
        report["tools"] = {t.name: t.meta for t in (await c.list_tools()).tools}

        uri = ((report["tools"].get(plan["ui_tool"]) or {}).get("ui") or {}).get("resourceUri", f"ui://{plan['ui_tool']}")
        page = (await c.read_resource(uri)).contents[0]
        report["page"] = {"uri": uri, "mimeType": page.mime_type, "text": getattr(page, "text", None)}

        progress = 0

        async def on_progress(p, total, message):
            nonlocal progress
            progress += 1

        done = await c.call_tool(plan["progress"]["name"], plan["progress"]["arguments"], progress_callback=on_progress)
        report["progress"] = {"count": progress, "text": text(done)}

        elicited = await c.call_tool(plan["elicit"]["name"], plan["elicit"]["arguments"])
        report["elicit"] = {"calls": elicitations, "text": text(elicited)}

        # Cancel the slow call once its first progress shows it runs upstream: over HTTP at
        # 2026 the client aborts the POST, which is all the proxy gets to see.
        report["cancel"] = {"progress": 0, "error": None}
        started = anyio.Event()

        async def on_slow_progress(p, total, message):
            report["cancel"]["progress"] += 1
            started.set()

        async def slow():
            await c.call_tool(plan["slow"]["name"], plan["slow"]["arguments"], progress_callback=on_slow_progress)
            report["cancel"]["error"] = "the call completed instead of being cancelled"

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            with anyio.fail_after(20):
                await started.wait()
            tg.cancel_scope.cancel()
        if report["cancel"]["error"] is None:
            report["cancel"]["error"] = "cancelled"

        report["after"] = text(await c.call_tool(plan["after"]["name"], plan["after"]["arguments"]))
        return report


def wait_for(check, what: str, timeout: float = 10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"not seen within {timeout}s: {what}")


@pytest.mark.parametrize("up", ["everything", "py26", "py26-http"])
@pytest.mark.parametrize("host", ["ts", "py"])
def test_protocol_era_matrix(host, up, tmp_path):
    plan = PLANS[up]
    marker = tmp_path / "cancelled"
    stack = contextlib.ExitStack()
    if up == "everything":
        args = upstream_args("stdio")
    elif up == "py26":
        args = ["--upstream", shlex.join([sys.executable, str(PY26_UPSTREAM)]), "--upstream-env", f"PY26_CANCEL_MARKER={marker}"]
    else:
        port = free_port()
        server = Proc(f"py26-http-{host}", [sys.executable, str(PY26_UPSTREAM), "http", str(port)], env={"PY26_CANCEL_MARKER": str(marker)})
        stack.callback(server.stop)
        wait_port(port)
        args = ["--upstream-url", f"http://127.0.0.1:{port}/mcp"]
    with stack, proxy_http([*args, "--provider", "offline"], name=f"proxy-eras-{host}-{up}") as (base, proc):
        def cancelled() -> float:
            return metric(scrape(base), "mcp_gen_ui_requests_total", method="tools/call", outcome="cancelled")

        assert cancelled() == 0
        report = ts_host(base + "/mcp", plan) if host == "ts" else anyio.run(py_host, base + "/mcp", plan)

        # 1. The era each host speaks, and every upstream tool carries its UI.
        assert report["protocolVersion"] == ERA[host], report["protocolVersion"]
        wanted = {plan[k]["name"] for k in ("progress", "elicit", "slow", "after")}
        assert wanted <= set(report["tools"]), report["tools"].keys()
        for name, meta in report["tools"].items():
            if name.startswith("_ui_"):
                continue  # the proxy's own tools, for the model only: no page
            assert (meta or {}).get("ui", {}).get("resourceUri") == f"ui://{name}", (name, meta)

        # 2. The tool's page.
        page = report["page"]
        assert page["uri"] == f"ui://{plan['ui_tool']}"
        assert page["mimeType"] == "text/html;profile=mcp-app", page["mimeType"]
        assert "<form" in page["text"] and "McpGenUiRuntime" in page["text"], page["text"][:500]

        # 3. Progress, then the result.
        assert report["progress"]["count"] >= 1, report["progress"]
        assert report["progress"]["text"], report["progress"]

        # 4. The elicitation reached the host's handler, and its answer the tool.
        assert report["elicit"]["calls"] == 1, report["elicit"]
        assert plan["elicit"]["expect"] in report["elicit"]["text"], report["elicit"]

        # 5. Cancelled on the host, told upstream, and the next call still works.
        assert report["cancel"]["progress"] >= 1 and report["cancel"]["error"], report["cancel"]
        wait_for(lambda: cancelled() >= 1, "requests_total{method=tools/call,outcome=cancelled} >= 1")
        if up.startswith("py26"):
            wait_for(marker.exists, f"the upstream's cancellation marker {marker}")
        assert plan["after"]["expect"] in report["after"], report["after"]

        log = proc.log_path.read_text()
        modern = up.startswith("py26")
        assert (MODERN_LOG in log) == modern, f"{MODERN_LOG!r} in the log should be {modern}"
        ready = json.loads(urllib.request.urlopen(base + "/readyz").read())
        assert ready["protocol"] == ("2026-07-28" if modern else "2025-11-25"), ready


def test_a_2025_subscriber_hears_a_2026_upstreams_updates():
    """resources/subscribe from a session host becomes part of the one subscriptions/listen the
    proxy holds with a 2026 upstream; the update comes back as resources/updated."""
    from mcpclient import session

    async def scenario(base):
        updated = anyio.Event()

        async def handler(msg):
            if isinstance(msg, types.ResourceUpdatedNotification) and str(msg.params.uri) == "info://counter":
                updated.set()

        async with session("mcp", base, message_handler=handler) as watcher, session("mcp", base) as other:
            await watcher.subscribe_resource("info://counter")
            await anyio.sleep(0.5)  # the proxy opens its listen again with the new resource
            await other.call_tool("touch", {"uri": "info://counter"})
            with anyio.fail_after(10):
                await updated.wait()

    with proxy_http(["--upstream", shlex.join([sys.executable, str(PY26_UPSTREAM)]), "--provider", "offline"], name="proxy-eras-listen") as (base, proc):
        anyio.run(scenario, base)
        assert MODERN_LOG in proc.log_path.read_text()


def test_mcp_param_headers_travel_both_ways(tmp_path):
    """A 2026 tool argument marked `x-mcp-header` travels in an `Mcp-Param-*` header too: the
    proxy checks it on a 2026 host's call, and adds it to calls to a 2026 HTTP upstream (which
    refuses a call without it), for hosts of either era."""
    from mcpclient import session

    port = free_port()
    server = Proc("py26-http-params", [sys.executable, str(PY26_UPSTREAM), "http", str(port)])
    try:
        wait_port(port)
        with proxy_http(["--upstream-url", f"http://127.0.0.1:{port}/mcp", "--provider", "offline"], name="proxy-eras-params") as (base, _):
            async def both():
                async with Client(base + "/mcp", mode="auto") as modern:
                    assert modern.protocol_version == "2026-07-28"
                    r = await modern.call_tool("locate", {"region": "eu west"})
                    assert not r.is_error and r.content[0].text == "served in eu west", r
                async with session("mcp", base) as old:
                    r = await old.call_tool("locate", {"region": "ap south"})
                    assert not r.is_error and r.content[0].text == "served in ap south", r

            anyio.run(both)
            # A 2026 call whose header disagrees with its body is refused at the proxy.
            import http.client
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "locate", "arguments": {"region": "eu"}, "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}}
            c = http.client.HTTPConnection("127.0.0.1", int(base.rsplit(":", 1)[1]), timeout=10)
            c.request("POST", "/mcp", body=json.dumps(body), headers={
                "Content-Type": "application/json", "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
                "Mcp-Method": "tools/call", "Mcp-Name": "locate", "Mcp-Param-Region": "us"})
            r = c.getresponse()
            answer = json.loads(r.read())
            assert r.status == 400 and answer["error"]["code"] == -32020 and "Mcp-Param-Region" in answer["error"]["message"], answer
    finally:
        server.stop()

"""Issue 4 acceptance: refinement, introspection, the tool lifecycle, export and debug output,
through real MCP clients against the proxy with the local fake LLM."""

import json
import subprocess
import sys
from pathlib import Path

import anyio
import mcp.types as types
import pytest
from mcp.shared.exceptions import MCPError

from conftest import BIN, proxy_http
from fake_llm import page
from mcpclient import session
from test_generation import gen_proxy

RECORDER = str(Path(__file__).with_name("recording_upstream.py"))




def structured(res):
    assert not res.is_error, res.content[0].text
    return res.structured_content


def test_refine_twice_reaches_the_prompt_and_subscribers(fake, tmp_path):
    fake.script = [{"html": page("PAGE-ONE")}, {"html": page("PAGE-TWO")}, {"html": page("PAGE-THREE")}]
    with gen_proxy(fake, "anthropic", name="proxy-refine", tmp_path=tmp_path) as (base, _):
        async def scenario():
            updated = anyio.Event()

            async def watcher_handler(msg):
                if isinstance(msg, types.ResourceUpdatedNotification) and str(msg.params.uri) == "ui://get_forecast":
                    updated.set()

            async with session("mcp", base, message_handler=watcher_handler) as watcher, session("mcp", base) as s:
                await watcher.subscribe_resource("ui://get_forecast")
                first = await s.read_resource("ui://get_forecast")
                assert "PAGE-ONE" in first.contents[0].text
                progress = []

                async def on_progress(p, total, message):
                    progress.append((p, total))

                r1 = structured(await s.call_tool("_ui_refine", {"toolName": "get_forecast", "feedback": "show the days as a table"}, progress_callback=on_progress))
                assert r1["refinements"] == 1 and r1["kind"] in ("generated", "repaired")
                assert progress and progress[0][0] == 0, "the host's progress token got progress while the UI was made"
                r2 = structured(await s.call_tool("_ui_refine", {"toolName": "get_forecast", "feedback": "hottest day first"}))
                assert r2["refinements"] == 2
                with anyio.move_on_after(5):
                    await updated.wait()
                assert updated.is_set(), "the subscribed client got notifications/resources/updated"
                after = await s.read_resource("ui://get_forecast")
                assert "PAGE-THREE" in after.contents[0].text, "the read after refining serves the new page"
                inspect = structured(await s.call_tool("_ui_inspect", {"toolName": "get_forecast"}))
                assert [r["feedback"] for r in inspect["refinements"]] == ["show the days as a table", "hottest day first"]
                assert inspect["refinements"][0]["replacedKey"] and inspect["cacheKey"] != inspect["refinements"][0]["replacedKey"]

        anyio.run(scenario)
    prompt = json.dumps(fake.generations()[-1]["body"])
    a, b = prompt.find("show the days as a table"), prompt.find("hottest day first")
    assert 0 <= a < b, "the second generation request carries both feedbacks, in order"


@pytest.mark.parametrize("mode", ["generated", "template", "fallback"])
def test_introspection_shapes(fake, mode, tmp_path):
    if mode == "template":
        fake.classification = "minimal"
    if mode == "fallback":
        fake.default = {"status": 400, "type": "invalid_request_error"}
    with gen_proxy(fake, "openai", name=f"proxy-inspect-{mode}", tmp_path=tmp_path) as (base, _):
        async def scenario():
            async with session("mcp", base) as s:
                names = {t.name for t in (await s.list_tools()).tools}
                assert {"_ui_list", "_ui_inspect", "_ui_regenerate", "_ui_refresh_tools", "_ui_refine"} <= names
                await s.read_resource("ui://get_forecast")
                listing = structured(await s.call_tool("_ui_list", {}))["tools"]
                row = next(t for t in listing if t["name"] == "get_forecast")
                assert set(row) == {"name", "enabled", "uiType", "kind", "cached", "refinements", "fallbackReason"}
                assert row["cached"] is True and row["enabled"] is True and row["refinements"] == 0
                other = next(t for t in listing if t["name"] == "set_units")
                assert other["cached"] is False
                info = structured(await s.call_tool("_ui_inspect", {"toolName": "get_forecast"}))
                for key in ["cacheKey", "generatedAt", "durationMs", "model", "promptVersion", "templateVersion", "refinements", "inputSchema", "fallbackReason", "validationWarnings"]:
                    assert key in info, key
                assert len(info["cacheKey"]) == 64 and info["inputSchema"]["properties"]["days"]["maximum"] == 14
                expected = {"generated": (("generated", "repaired"), None), "template": (("template",), "minimal"), "fallback": (("template",), "INVALID_REQUEST")}[mode]
                assert info["kind"] in expected[0] and info["fallbackReason"] == expected[1], info
                before = len(fake.requests)
                regen = structured(await s.call_tool("_ui_regenerate", {"toolName": "get_forecast"}))
                assert regen["toolName"] == "get_forecast" and "durationMs" in regen
                if mode != "template":
                    assert len(fake.requests) > before, "regenerate bypasses the cache"
                bad = await s.call_tool("_ui_inspect", {"toolName": "nope"})
                assert bad.is_error and "get_forecast" in bad.content[0].text
                bad = await s.call_tool("_ui_refine", {"toolName": "get_forecast"})
                assert bad.is_error and "feedback is required" in bad.content[0].text

        anyio.run(scenario)


def test_plain_hosts_do_not_see_ui_tools():
    with proxy_http(["--demo"], name="proxy-plain") as (base, _):
        async def scenario():
            async with session("mcp", base, ui=False) as s:
                names = {t.name for t in (await s.list_tools()).tools}
                assert not any(n.startswith("_ui_") for n in names)
                assert all("ui" not in (t.meta or {}) for t in (await s.list_tools()).tools)
                assert not [r for r in (await s.list_resources()).resources if str(r.uri).startswith("ui://")]

        anyio.run(scenario)


def test_tool_list_changes_at_run_time(fake, tmp_path):
    log = tmp_path / "up.jsonl"
    upstream = ["--upstream", f"{sys.executable} {RECORDER} {log}"]
    with gen_proxy(fake, "openai", upstream=upstream, name="proxy-lifecycle", tmp_path=tmp_path) as (base, _):
        async def scenario():
            changes = []

            async def handler(msg):
                if isinstance(msg, (types.ToolListChangedNotification, types.ResourceListChangedNotification)):
                    changes.append(type(msg).__name__)

            async with session("mcp", base, message_handler=handler) as s:
                await s.read_resource("ui://slow")
                await s.read_resource("ui://meta")
                gens = len(fake.generations())
                await s.call_tool("add_tool", {"name": "late_tool"})
                await s.call_tool("remove_tool", {"name": "meta"})
                await s.call_tool("describe_tool", {"name": "slow", "description": "Answers after a long pause"})
                for _ in range(50):
                    tools = {t.name: t for t in (await s.list_tools()).tools}
                    if "meta" not in tools and "late_tool" in tools and tools["slow"].description.endswith("long pause"):
                        break
                    await anyio.sleep(0.1)
                assert "late_tool" in tools and "meta" not in tools
                resources = {str(r.uri) for r in (await s.list_resources()).resources}
                assert "ui://late_tool" in resources and "ui://meta" not in resources
                with pytest.raises(MCPError) as e:
                    await s.read_resource("ui://meta")
                assert e.value.error.code == -32002 and "ui://meta" in e.value.error.message
                await s.read_resource("ui://slow")
                assert len(fake.generations()) == gens + 1, "the changed tool was generated again"
                diff = structured(await s.call_tool("_ui_refresh_tools", {}))
                assert set(diff) == {"added", "removed", "changed", "unchanged"} and "slow" in diff["unchanged"]
                assert "ToolListChangedNotification" in changes and "ResourceListChangedNotification" in changes

        anyio.run(scenario)


def test_enabled_tools_limit_the_uis(fake, tmp_path):
    with gen_proxy(fake, "openai", config={"generation": {"enabledTools": ["get_forecast"]}}, name="proxy-enabled", tmp_path=tmp_path) as (base, _):
        async def scenario():
            async with session("mcp", base) as s:
                tools = {t.name: t for t in (await s.list_tools()).tools}
                assert tools["get_forecast"].meta["ui"]["resourceUri"] == "ui://get_forecast"
                assert "ui" not in (tools["set_units"].meta or {})
                res = await s.call_tool("set_units", {"units": "imperial"})
                assert not res.is_error, "every tool is still proxied"
                with pytest.raises(MCPError):
                    await s.read_resource("ui://set_units")

        anyio.run(scenario)


def test_export_writes_one_page_per_tool(tmp_path):
    out = subprocess.run([str(BIN), "--demo", "export", str(tmp_path / "ui")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    files = sorted(p.name for p in (tmp_path / "ui").glob("*.html"))
    assert files == ["get_current_weather.html", "get_forecast.html", "get_weather_map.html", "set_units.html"]
    assert "<form" in (tmp_path / "ui" / "get_forecast.html").read_text()
    assert "exported 4 tool UIs" in out.stdout


def test_debug_writes_the_prompt_and_the_page(fake, tmp_path):
    debug = tmp_path / "debug"
    export = tmp_path / "export"
    with gen_proxy(fake, "openai", config={"logging": {"debugDir": str(debug)}}, args=["--debug", "--export-dir", str(export)], name="proxy-debug", tmp_path=tmp_path) as (base, proc):
        async def scenario():
            async with session("mcp", base) as s:
                await s.read_resource("ui://get_forecast")
                await s.read_resource("ui://get_forecast")

        anyio.run(scenario)
        assert len(fake.generations()) == 2, "--debug turns the cache off"
        prompts = list(debug.glob("get_forecast-*.prompt.txt"))
        pages = list(debug.glob("get_forecast-*.html"))
        assert prompts and pages
        assert "get_forecast" in prompts[0].read_text() and "GENERATED-PAGE" in pages[0].read_text()
        assert (export / "get_forecast.html").exists()
        assert "raw LLM answer" in proc.log_path.read_text()

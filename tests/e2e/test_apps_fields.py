"""MCP Apps fields of the 2026-01-26 spec on what the service adds: the `_ui_*` tools are for the
model only, each `ui://` resource declares its CSP (empty: pages are self-contained) and
prefersBorder, a configured sandbox domain passes through, and the flat legacy key stays."""

import json
import subprocess

import anyio

from conftest import BIN, proxy_http
from mcpclient import session


def surface(base):
    async def go():
        async with session("mcp", base) as s:
            tools = (await s.list_tools()).tools
            resources = (await s.list_resources()).resources
            read = await s.read_resource("ui://get_forecast")
            return tools, resources, read.contents[0]

    return anyio.run(go)


def test_ui_tools_model_only_and_resources_with_csp(tmp_path):
    cfg = tmp_path / "ui.json"
    cfg.write_text(json.dumps({"ui": {"domain": "abc123.mcp-content.example"}}))
    with proxy_http(["--demo", "--config", str(cfg)], name="proxy-apps-fields") as (base, _):
        tools, resources, content = surface(base)
    ours = [t for t in tools if t.name.startswith("_ui_") and t.name != "_ui_page_status"]
    assert len(ours) == 5 and all(t.meta["ui"]["visibility"] == ["model"] for t in ours), "Views may not call the _ui_* tools"
    status = next(t for t in tools if t.name == "_ui_page_status")
    assert status.meta["ui"]["visibility"] == ["app"], "the provisional page's own tool: the model never sees it"
    forecast = next(t for t in tools if t.name == "get_forecast")
    assert forecast.meta["ui"]["resourceUri"] == "ui://get_forecast" and forecast.meta["ui/resourceUri"] == "ui://get_forecast"
    listed = next(r for r in resources if str(r.uri) == "ui://get_forecast")
    for ui in (listed.meta["ui"], content.meta["ui"]):
        assert ui["csp"] == {"connectDomains": [], "resourceDomains": [], "frameDomains": [], "baseUriDomains": []}
        assert ui["prefersBorder"] is True
        assert ui["domain"] == "abc123.mcp-content.example"


def test_no_domain_unless_configured_and_a_bad_one_is_refused(tmp_path):
    with proxy_http(["--demo"], name="proxy-apps-nodomain") as (base, _):
        _, _, content = surface(base)
    assert "domain" not in content.meta["ui"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"ui": {"domain": "https://x.example/path"}}))
    r = subprocess.run([str(BIN), "--demo", "--config", str(bad)], capture_output=True, text=True, timeout=20)
    assert r.returncode == 2 and "ui.domain" in r.stderr, r.stderr

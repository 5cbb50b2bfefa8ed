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


# --- Issue 34: the Apps SDK dialect beside MCP Apps ------------------------------------------------


def dialects(base, ui: bool):
    async def go():
        async with session("mcp", base, ui=ui) as s:
            init = s.server_capabilities
            tools = {t.name: t for t in (await s.list_tools()).tools}
            resources = (await s.list_resources()).resources
            read = None
            if any(str(r.uri) == "ui://get_forecast" for r in resources):
                read = (await s.read_resource("ui://get_forecast")).contents[0]
            return init, tools, resources, read

    return anyio.run(go)


def config(tmp_path, apps_sdk=None):
    path = tmp_path / "ui.json"
    path.write_text(json.dumps({"ui": {"appsSdk": apps_sdk}} if apps_sdk else {}))
    return ["--demo", "--config", str(path)]


def test_hosts_that_declare_the_extension_get_both_dialects(tmp_path):
    with proxy_http(config(tmp_path), name="proxy-dialects-both") as (base, _):
        _, tools, resources, read = dialects(base, ui=True)
    forecast = tools["get_forecast"].meta
    assert forecast["ui"]["resourceUri"] == "ui://get_forecast" and forecast["openai/outputTemplate"] == "ui://get_forecast"
    assert forecast["openai/widgetAccessible"] is True, "the page calls tools"
    listed = next(r for r in resources if str(r.uri) == "ui://get_forecast")
    for meta in (listed.meta, read.meta):
        assert meta["ui"]["csp"]["connectDomains"] == [] and meta["openai/widgetCSP"] == {"connect_domains": [], "resource_domains": []}
        assert meta["openai/widgetPrefersBorder"] is True and "get_forecast" in meta["openai/widgetDescription"]
    assert read.mime_type == "text/html;profile=mcp-app"
    assert "window.openai" in read.text, "the page's runtime speaks both"


def test_hosts_that_declare_nothing_see_unchanged_tools_unless_opted_in(tmp_path):
    with proxy_http(config(tmp_path), name="proxy-dialects-plain") as (base, _):
        caps, tools, resources, read = dialects(base, ui=False)
    assert not any(n.startswith("_ui_") for n in tools)
    for t in tools.values():
        assert not any(k.startswith("openai/") for k in (t.meta or {})) and "ui" not in (t.meta or {}), t.meta
    assert read is None and not any(str(r.uri).startswith("ui://") for r in resources)

    opted = tmp_path / "opted"
    opted.mkdir()
    with proxy_http(config(opted, "undeclared"), name="proxy-dialects-undeclared") as (base, _):
        caps, tools, resources, read = dialects(base, ui=False)
    forecast = tools["get_forecast"].meta
    assert forecast["openai/outputTemplate"] == "ui://get_forecast" and "ui" not in forecast and "ui/resourceUri" not in forecast
    assert "_ui_page_status" in tools, "the provisional page's tool is there for them too"
    assert read.mime_type == "text/html+skybridge" and "ui" not in read.meta and read.meta["openai/widgetCSP"]["connect_domains"] == []
    assert caps.resources is not None and not (getattr(caps, "extensions", None) or {}).get("io.modelcontextprotocol/ui")


def test_apps_sdk_keys_can_be_turned_off(tmp_path):
    with proxy_http(config(tmp_path, "off"), name="proxy-dialects-off") as (base, _):
        _, tools, resources, read = dialects(base, ui=True)
    assert "openai/outputTemplate" not in tools["get_forecast"].meta and tools["get_forecast"].meta["ui"]["resourceUri"]
    assert not any(k.startswith("openai/") for k in read.meta)


def test_the_demos_schemas_name_no_dialect(tmp_path):
    with proxy_http(config(tmp_path), name="proxy-dialects-schemas") as (base, _):
        _, tools, _, _ = dialects(base, ui=False)
    for t in tools.values():
        text = json.dumps([t.input_schema, t.output_schema])
        assert "$schema" not in text and "$defs" not in text and "$ref" not in text, (t.name, text[:300])

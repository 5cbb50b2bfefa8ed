"""Issue 21, what hosts no one here wrote need (items 1, 4 and 6 here; the browser half of item
1 is tests/node/browser/web_host.test.mjs): CORS for web hosts over raw HTTP, the demo's schemas
in standard JSON Schema, what a session without the UI extension is told of a page, and pages
whose scripts do not parse, which are repaired or replaced, never served."""

import json

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from conftest import proxy_http
from mcpclient import session
from test_auth import INIT, request

STANDARD = {"date-time", "date", "time", "duration", "email", "idn-email", "hostname", "idn-hostname", "ipv4", "ipv6", "uri",
            "uri-reference", "iri", "iri-reference", "uuid", "uri-template", "json-pointer", "relative-json-pointer", "regex"}


def formats(v) -> set:
    if isinstance(v, dict):
        return ({v["format"]} if isinstance(v.get("format"), str) else set()) | set().union(*(formats(x) for x in v.values()))
    if isinstance(v, list):
        return set().union(*(formats(x) for x in v)) if v else set()
    return set()


def test_the_demo_schemas_use_only_standard_formats():
    with proxy_http(["--demo"], name="proxy-demo-formats") as (base, _):
        async def go():
            async with session("mcp", base) as s:
                return [t.model_dump(by_alias=True) for t in (await s.list_tools()).tools]

        tools = anyio.run(go)
        used = formats([{k: t.get(k) for k in ("inputSchema", "outputSchema")} for t in tools])
        assert used <= STANDARD, f"formats JSON Schema does not define: {used - STANDARD}"
        forecast = next(t for t in tools if t["name"] == "get_forecast")
        assert forecast["inputSchema"]["properties"]["days"]["type"] == "integer", "the types and bounds stay"


def test_a_session_without_the_ui_extension_is_told_how_to_read_a_page():
    with proxy_http(["--demo"], name="proxy-no-ui-read") as (base, _):
        async def go():
            async with session("mcp", base, ui=False) as s:
                with pytest.raises(MCPError) as e:
                    await s.read_resource("ui://get_current_weather")
                return str(e.value)

        msg = anyio.run(go)
        assert "get_current_weather" in msg and "io.modelcontextprotocol/ui" in msg and "initialize" in msg, msg
        assert "no tool named" not in msg


ORIGIN = "https://chat.example.com"


def test_cors_for_allowed_origins_only():
    with proxy_http(["--demo", "--allowed-origin", ORIGIN, "--auth-token", "cors-token-4b8e2d1c9f"], name="proxy-cors") as (base, _):
        ask = {"Origin": ORIGIN, "Access-Control-Request-Method": "POST",
               "Access-Control-Request-Headers": "authorization, content-type, mcp-session-id, mcp-protocol-version, mcp-param-city"}
        for path in ["/mcp", "/sse", "/messages"]:
            code, headers, _ = request(base + path, "OPTIONS", headers=ask)
            assert code == 204, (path, code)
            assert headers["Access-Control-Allow-Origin"] == ORIGIN
            assert "POST" in headers["Access-Control-Allow-Methods"] and "DELETE" in headers["Access-Control-Allow-Methods"]
            assert set(headers["Access-Control-Allow-Headers"].split(", ")) == {"authorization", "content-type", "mcp-session-id",
                                                                                  "mcp-protocol-version", "mcp-param-city"}
        # A refusal (no token) is readable by the page: the challenge is exposed.
        code, headers, _ = request(base + "/mcp", "POST", INIT, headers={"Origin": ORIGIN})
        assert code == 401 and headers["Access-Control-Allow-Origin"] == ORIGIN
        assert "WWW-Authenticate" in headers["Access-Control-Expose-Headers"]
        code, headers, _ = request(base + "/mcp", "POST", INIT, token="cors-token-4b8e2d1c9f", headers={"Origin": ORIGIN})
        assert code == 200 and "Mcp-Session-Id" in headers["Access-Control-Expose-Headers"]
        # Other origins: no CORS at all, and their requests are refused.
        evil = dict(ask, Origin="https://evil.example.com")
        code, headers, _ = request(base + "/mcp", "OPTIONS", headers=evil)
        assert code == 403 and "Access-Control-Allow-Origin" not in headers
        code, headers, _ = request(base + "/mcp", "POST", INIT, token="cors-token-4b8e2d1c9f", headers={"Origin": "https://evil.example.com"})
        assert code == 403 and "Access-Control-Allow-Origin" not in headers
        # Headers outside MCP's are not granted.
        code, headers, _ = request(base + "/mcp", "OPTIONS", headers=dict(ask, **{"Access-Control-Request-Headers": "cookie"}))
        assert code == 403 and "Access-Control-Allow-Origin" not in headers


# --- item 4: scripts parsed before serving -----------------------------------------------------

BROKEN = """<!doctype html><html><head><meta charset="utf-8"><title>broken</title></head><body><h1>BROKEN-PAGE</h1>
<script type="module">
import { App } from "@modelcontextprotocol/ext-apps";
const app = new App({ name: "broken", version: "1.0.0" });
app.ontoolresult = (r) => { render(r;
await app.connect();
</script></body></html>"""


def test_a_page_whose_script_does_not_parse_is_repaired_or_replaced_never_served(fake, tmp_path):
    from fake_llm import page
    from test_generation import gen_proxy, read_ui

    fake.script = [{"html": BROKEN}, {"html": page("FIXED-PAGE", "get_forecast")}]
    with gen_proxy(fake, "openai", name="proxy-broken-script", tmp_path=tmp_path) as (base, _):
        html, meta = read_ui(base, "get_forecast")
        assert "FIXED-PAGE" in html and "BROKEN-PAGE" not in html, meta
        asked = [json.dumps(g["body"]) for g in fake.generations()]
        assert len(asked) == 2
        assert "does not parse" not in asked[0] and "does not parse at line 4" in asked[1], "the repair prompt carries the parser's message"

    fake.script = []
    fake.default = {"html": BROKEN}
    with gen_proxy(fake, "openai", name="proxy-broken-always", tmp_path=tmp_path) as (base, _):
        html, meta = read_ui(base, "get_forecast")
        assert "BROKEN-PAGE" not in html and meta["kind"] == "template", meta
        assert meta["fallbackReason"] == "script_syntax", meta


# --- item 5: FastMCP results ------------------------------------------------------------------


def test_fastmcp_results_are_unwrapped_for_shaping_and_learned_shapes(fake, tmp_path):
    import sys
    from pathlib import Path

    from fake_llm import page
    from test_generation import gen_proxy

    fake.default = {"html": page("FASTMCP-PAGE", "export_report")}
    server = Path(__file__).with_name("fastmcp_upstream.py")
    cfg = {"results": {"shaping": "artifacts"}, "generation": {"learnResultShape": True}}

    async def call(base, ui):
        async with session("mcp", base, ui=ui) as s:
            return await s.call_tool("export_report", {"rows": 1})

    async def read(base):
        async with session("mcp", base) as s:
            await s.read_resource("ui://export_report")

    with gen_proxy(fake, "openai", upstream=["--upstream", f"{sys.executable} {server}"], config=cfg, name="proxy-fastmcp", tmp_path=tmp_path) as (base, _):
        plain = anyio.run(call, base, False)
        wrapped = plain.structured_content
        assert set(wrapped) == {"result"} and isinstance(wrapped["result"], str), "FastMCP wraps the string (the plain host sees it unchanged)"
        assert "returned_file_contents" in plain.content[0].text
        shaped = anyio.run(call, base, True)
        assert shaped.structured_content == wrapped, "the wrapper its outputSchema declares stays (the page's runtime unwraps it)"
        assert "returned_file_contents" not in shaped.content[0].text and "report.csv" in shaped.content[0].text, "the model's text is shaped"
        assert '"rows": 1' in shaped.content[0].text.replace('"rows":1', '"rows": 1')
        anyio.run(read, base)
        prompt = json.dumps(fake.generations()[-1]["body"])
        assert "Shape of the results" in prompt and "returned_file_names" in prompt and "meta_data" in prompt, "the learnt shape has the inner keys"

"""Acceptance 1: a real MCP client lists tools, calls tools and reads a ui:// resource through
the proxy, for every upstream transport crossed with every host transport. Image content must
arrive byte-identical to what the upstream sends directly."""

import contextlib

import anyio
import pytest

from conftest import everything_cmd, everything_http, proxy_http, upstream_args
from mcpclient import session

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


async def direct_image() -> str:
    cmd = everything_cmd("stdio")
    async with stdio_client(StdioServerParameters(command=cmd[0], args=cmd[1:])) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            res = await s.call_tool("get-tiny-image", {})
            return next(c.data for c in res.content if c.type == "image")


@pytest.fixture(scope="module")
def reference_image():
    return anyio.run(direct_image)


@contextlib.contextmanager
def upstream(kind: str):
    if kind == "stdio":
        yield upstream_args("stdio")
    else:
        with everything_http("sse" if kind == "sse" else "streamableHttp") as url:
            yield upstream_args(kind, url)


async def exercise(transport: str, target, reference_image: str):
    async with session(transport, target) as s:
        tools = (await s.list_tools()).tools
        names = {t.name for t in tools}
        assert {"echo", "get-tiny-image"} <= names, names
        echo = next(t for t in tools if t.name == "echo")
        assert echo.meta["ui"]["resourceUri"] == "ui://echo"
        assert echo.meta["ui/resourceUri"] == "ui://echo"

        res = await s.call_tool("echo", {"message": "hello through the proxy"})
        assert not res.is_error
        assert "hello through the proxy" in res.content[0].text

        img = await s.call_tool("get-tiny-image", {})
        data = next(c.data for c in img.content if c.type == "image")
        assert data == reference_image, "image bytes changed on the way"

        page = await s.read_resource("ui://echo")
        content = page.contents[0]
        assert content.mime_type == "text/html;profile=mcp-app"
        assert "<form" in content.text and "McpGenUiRuntime" in content.text
        assert content.meta["ui"]["prefersBorder"] is True

        listed = {str(r.uri) for r in (await s.list_resources()).resources}
        assert "ui://echo" in listed
        # server-everything's own resources still come through.
        assert any(u.startswith("demo://") or u.startswith("test://") for u in listed), listed


@pytest.mark.parametrize("up", ["stdio", "sse", "streamable-http"])
@pytest.mark.parametrize("host", ["stdio", "sse", "mcp"])
def test_transport_matrix(up, host, reference_image):
    with upstream(up) as args:
        if host == "stdio":
            anyio.run(exercise, "stdio", args, reference_image)
        else:
            with proxy_http(args, name=f"proxy-{up}-{host}") as (base, _):
                anyio.run(exercise, host, base, reference_image)

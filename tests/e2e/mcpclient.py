"""Opens a Python `mcp` SDK ClientSession over any of the three host transports."""

import contextlib
import os

from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from conftest import ARTIFACTS, BIN, UI_EXT


@contextlib.asynccontextmanager
async def session(transport: str, target, ui: bool = True, **kwargs):
    """transport: stdio (target = proxy args), sse or mcp (target = base URL)."""
    ext = UI_EXT if ui else None
    if transport == "stdio":
        params = StdioServerParameters(command=str(BIN), args=["--transport", "stdio", *target], env=dict(os.environ))
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        with open(ARTIFACTS / "proxy-stdio.log", "a") as errlog:
            async with stdio_client(params, errlog=errlog) as (r, w):
                async with ClientSession(r, w, extensions=ext, **kwargs) as s:
                    await s.initialize()
                    yield s
    elif transport == "sse":
        async with sse_client(target + "/sse") as (r, w):
            async with ClientSession(r, w, extensions=ext, **kwargs) as s:
                await s.initialize()
                yield s
    else:
        async with streamable_http_client(target + "/mcp") as streams:
            r, w = streams[0], streams[1]
            async with ClientSession(r, w, extensions=ext, **kwargs) as s:
                await s.initialize()
                yield s

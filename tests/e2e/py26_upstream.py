"""A Python `mcp` 2.x MCPServer on stdio: the 2026-07-28 upstream of test_protocol_eras.py.

Its tools use only era-agnostic APIs (progress, `Resolve(Elicit(...))`), so what the proxy
sends decides the era; the proxy probes `server/discover` first, which makes it 2026.
`count` writes the file named by $PY26_CANCEL_MARKER when it is cancelled, so a test can see
that a host's cancellation reached this process."""

import os
from pathlib import Path
from typing import Annotated

import anyio
from pydantic import BaseModel, Field

from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve

mcp = MCPServer("py26-upstream", version="1.0.0")


class Name(BaseModel):
    name: str


async def ask(ctx: Context) -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@mcp.tool()
async def count(n: int, delay: float, ctx: Context) -> str:
    """Count to n, one step every `delay` seconds, reporting progress at each step."""
    i = 0
    try:
        for i in range(1, n + 1):
            await anyio.sleep(delay)
            await ctx.report_progress(i, n, f"step {i}/{n}")
    except anyio.get_cancelled_exc_class():
        marker = os.environ.get("PY26_CANCEL_MARKER")
        if marker:
            Path(marker).write_text(f"cancelled after step {i}")
        raise
    return f"counted to {n}"


@mcp.tool()
async def greet(greeting: str, who: Annotated[Name, Resolve(ask)]) -> str:
    """Greet the user after asking their name (an elicitation at either era)."""
    return f"{greeting}, {who.name}!"


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@mcp.tool()
def locate(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
    """Answer where a call was routed: over HTTP its region must also come as Mcp-Param-Region."""
    return f"served in {region}"


@mcp.resource("info://counter", mime_type="text/plain")
def counter() -> str:
    return "a resource hosts may subscribe to"


@mcp.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Tell subscribers (on subscriptions/listen) that a resource changed."""
    await ctx.notify_resource_updated(uri)
    return "told"


if __name__ == "__main__":
    import sys

    # `http PORT`: Streamable HTTP (a 2026 client cancels there by closing its request).
    if sys.argv[1:2] == ["http"]:
        mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        mcp.run("stdio")

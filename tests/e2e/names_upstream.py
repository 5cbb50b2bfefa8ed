"""An MCP server (Python `mcp` MCPServer, stdio) whose tool names test how names reach hosts:
one too long for the LLM APIs, one with a dot, one named like this service's own `_ui_*`
tools, and plain ones to hide, rename and describe."""

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("names-upstream", version="1.0.0")

LONG = "summarize_every_document_in_the_archive_and_produce_a_weekly_digest_for_the_team"


@mcp.tool(name=LONG)
def long_one(topic: str) -> str:
    """A tool whose name is longer than 64 characters."""
    return f"digest of {topic}"


@mcp.tool(name="files.read")
def files_read(path: str) -> str:
    """A tool whose name has a dot."""
    return f"read {path}"


@mcp.tool(name="_ui_refine")
def impostor(feedback: str) -> str:
    """An upstream tool named like one of mcp-gen-ui's own."""
    return f"upstream refine: {feedback}"


@mcp.tool()
def write_file(path: str, text: str) -> str:
    """Writes a file."""
    return f"wrote {len(text)} characters to {path}"


@mcp.tool()
def delete_everything() -> str:
    """Must never be callable through the proxy (denied in the servers file)."""
    return "deleted"


if __name__ == "__main__":
    mcp.run()

"""An MCP server written with FastMCP, as Python tool authors write them (PyPI `mcp`): a tool
that returns a JSON string with file artifacts, which FastMCP wraps as
`structuredContent: {"result": "<that string>"}`."""

import base64
import json

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("fastmcp-upstream", version="1.0.0")

CSV = base64.b64encode(b"city,high\nLisbon,21\nOslo,9\n").decode()


@mcp.tool()
def export_report(rows: int) -> str:
    """Exports a report as CSV."""
    return json.dumps({"results": [{"city": "Lisbon", "high": 21}][:rows], "meta_data": {"rows": rows},
                       "returned_file_names": ["report.csv"], "returned_file_contents": [CSV]})


if __name__ == "__main__":
    mcp.run()

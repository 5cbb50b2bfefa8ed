"""A stdio MCP server whose one tool answers the way some data servers do: one JSON object with
`results`, `meta_data`, `returned_file_names` and `returned_file_contents` (base64 files that
should never reach the model), as a text item."""

import base64
import json
import sys

CSV = base64.b64encode(b"city,high\nLisbon,21\nOslo,4\n").decode()


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


TOOL = {"name": "report", "description": "Builds a small report with a CSV file",
        "inputSchema": {"type": "object", "properties": {"rows": {"type": "integer"}}}, "annotations": {"readOnlyHint": True}}

def main():
    for line in sys.stdin:
        msg = json.loads(line)
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": params.get("protocolVersion"), "capabilities": {"tools": {}},
                                                           "serverInfo": {"name": "artifacts", "version": "1"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [TOOL]}})
        elif method == "tools/call":
            body = {"results": [{"city": "Lisbon", "high": 21}, {"city": "Oslo", "high": 4}], "meta_data": {"rows": 2},
                    "returned_file_names": ["report.csv"], "returned_file_contents": [CSV]}
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": json.dumps(body)}]}})
        elif rid is not None and method is not None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})


if __name__ == "__main__":
    main()

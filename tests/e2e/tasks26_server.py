"""A real 2026-07-28 MCP server with the tasks extension (`io.modelcontextprotocol/tasks`,
SEP-2663): the upstream for end-to-end tests of task-augmented tool calls.

It is built on PyPI `fastmcp-tasks` (with `fastmcp-slim`), the only tasks runtime for 2026-07-28
that ships; the official SDKs have none on the server side (Python `mcp` 2.x has only the
extension plumbing, the TypeScript SDK and `ext-tasks` only the client side). fastmcp-tasks is a
library with no runnable server, hence this file. Its pins clash with tests/requirements.txt, so
it runs from its own venv (tests/.venv-tasks26, from tests/tasks26-requirements.txt):

  tests/.venv-tasks26/bin/python tests/e2e/tasks26_server.py             # stdio
  tests/.venv-tasks26/bin/python tests/e2e/tasks26_server.py http PORT   # http://127.0.0.1:PORT/mcp

Tasks live in this process (Docket's `memory://` backend and in-process worker; no Redis), and
are followed by polling `tasks/get` only: the server sends no progress or task notifications.
Input is end-and-reenter: after `tasks/update` the tool body runs again from the top with
`ctx.input_responses` set. If $TASKS26_LOG names a file, `slow` appends `started <marker>` to it
when its body starts and `cancelled <marker>` when its body is cancelled (`tasks/cancel`)."""

import asyncio
import os
import sys
from datetime import timedelta

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension
from mcp.shared.exceptions import MCPError

mcp = FastMCP("tasks26-upstream", version="1.0.0")
# In memory, with the worker in this process; named here so no FASTMCP_DOCKET_* variable (or .env)
# moves it to Redis. Docket runs 10 tasks at once by default; more wait, `working` and silent.
mcp.add_extension(TasksExtension(url="memory://", concurrency=50))

TASK_ONLY = TaskConfig(mode="required", poll_interval=timedelta(milliseconds=300))


def log(line: str) -> None:
    path = os.environ.get("TASKS26_LOG")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


@mcp.tool(task=TASK_ONLY)
async def research(topic: str, ctx: Context, ask: bool = False) -> str:
    """Researches a topic: three statuses, then (if `ask`) asks how deep to go, then a report."""
    answers = ctx.input_responses
    if not answers:
        for i in range(1, 4):
            await ctx.report_progress(i, 3, f"gathering sources {i}/3 for {topic}")
            await asyncio.sleep(0.7)
        if ask:
            return mcp_types.InputRequiredResult(input_requests={"depth": mcp_types.ElicitRequest(
                params=mcp_types.ElicitRequestFormParams(
                    message=f"How deep should the research on {topic} go?",
                    requested_schema={"type": "object", "properties": {"depth": {"type": "string", "enum": ["shallow", "deep"]}},
                                      "required": ["depth"]}))})
    depth = "default"
    answer = (answers or {}).get("depth")
    if answer is not None:
        content = getattr(answer, "content", None)
        action = getattr(answer, "action", "?")
        depth = f"{action}:{content.get('depth')}" if content else action
    await ctx.report_progress(1, 1, f"writing report on {topic}")
    await asyncio.sleep(0.5)
    return f"Report on {topic} (depth={depth})"


@mcp.tool(task=TASK_ONLY)
async def slow(seconds: float, ctx: Context, marker: str = "") -> str:
    """Takes `seconds` seconds, with a status each second; logs its start and its cancellation."""
    log(f"started {marker}")
    try:
        loop = asyncio.get_running_loop()
        end = loop.time() + seconds
        i = 0
        while (left := end - loop.time()) > 0:
            i += 1
            await ctx.report_progress(i, None, f"tick {i}")
            await asyncio.sleep(min(1.0, left))
    except asyncio.CancelledError:
        log(f"cancelled {marker}")
        raise
    return f"slept {seconds}"


@mcp.tool(task=TASK_ONLY)
async def fail_protocol() -> str:
    """Fails with a protocol error: the task ends `failed`, the error inline."""
    raise MCPError(-32000, "upstream exploded")


@mcp.tool
def plain(x: int) -> int:
    """Not a task tool: answered inline."""
    return x + 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "http":
        mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[2]), show_banner=False)
    else:
        mcp.run(transport="stdio", show_banner=False)

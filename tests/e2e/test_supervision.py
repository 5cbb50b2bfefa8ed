"""Acceptance 3: killing the upstream child mid-call fails the in-flight call with a clear error
within a second, keeps the host session open, and a call after the restart succeeds."""

import os
import signal
import subprocess
import time

import anyio
import pytest
from mcp.shared.exceptions import MCPError as McpError

from conftest import proxy_http, upstream_args
from mcpclient import session


def child_pids(parent: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(parent)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def upstream_pid(proxy_pid: int) -> int:
    deadline = time.time() + 10
    while time.time() < deadline:
        kids = child_pids(proxy_pid)
        if kids:
            return kids[0]
        time.sleep(0.05)
    raise AssertionError("the proxy has no upstream child")


async def crash_during_call(transport, target, proxy_pid_fn):
    async with session(transport, target) as s:
        assert (await s.call_tool("echo", {"message": "before"})).content[0].text.endswith("before")
        pid = upstream_pid(proxy_pid_fn())
        outcome = {}

        async def long_call():
            t0 = time.monotonic()
            try:
                await s.call_tool("trigger-long-running-operation", {"duration": 30, "steps": 3})
                outcome["error"] = None
            except McpError as e:
                outcome["error"] = e.message
            outcome["t"] = time.monotonic() - t0

        async with anyio.create_task_group() as tg:
            tg.start_soon(long_call)
            await anyio.sleep(1.0)
            killed_at = time.monotonic()
            os.kill(pid, signal.SIGKILL)
        waited = time.monotonic() - killed_at
        assert outcome["error"], "the in-flight call should fail"
        assert "upstream" in outcome["error"] and "exited" in outcome["error"], outcome["error"]
        assert waited < 1.0, f"the in-flight call took {waited:.2f}s to fail after the crash"

        # Same session, after the supervisor restarted the upstream.
        deadline = time.monotonic() + 20
        while True:
            try:
                res = await s.call_tool("echo", {"message": "after"})
                assert res.content[0].text.endswith("after")
                break
            except McpError:
                if time.monotonic() > deadline:
                    raise
                await anyio.sleep(0.2)
        assert upstream_pid(proxy_pid_fn()) != pid, "a new upstream process should be running"


@pytest.mark.parametrize("transport", ["mcp", "stdio"])
def test_upstream_crash_is_survived(transport, tmp_path):
    args = upstream_args("stdio")
    if transport == "stdio":
        # The stdio proxy is the client's child; find it by its command line.
        def proxy_pid():
            out = subprocess.run(["pgrep", "-f", "--newest", "mcp-gen-ui --transport stdio"], capture_output=True, text=True).stdout.split()
            return int(out[0])

        anyio.run(crash_during_call, "stdio", args, proxy_pid)
    else:
        with proxy_http(args, name="proxy-supervision") as (base, proc):
            anyio.run(crash_during_call, "mcp", base, lambda: proc.p.pid)
            import urllib.request

            metrics = urllib.request.urlopen(base + "/metrics").read().decode()
            assert "mcp_gen_ui_upstream_restarts_total 1" in metrics
            assert "mcp_gen_ui_upstream_connected 1" in metrics


def test_streamable_http_upstream_restart_reinitializes():
    """The upstream HTTP server restarts (forgetting its sessions): the proxy sees 404 for its
    session, re-initializes, and the host's session keeps working."""
    from conftest import EVERYTHING, NODE, Proc, free_port, wait_port

    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"

    def start():
        p = Proc(f"everything-restart-{time.time_ns()}", [NODE, str(EVERYTHING), "streamableHttp"], env={"PORT": str(port)})
        wait_port(port)
        return p

    async def scenario(base, restart):
        async with session("mcp", base) as s:
            assert (await s.call_tool("echo", {"message": "one"})).content[0].text.endswith("one")
            restart()
            deadline = time.monotonic() + 30
            while True:
                try:
                    res = await s.call_tool("echo", {"message": "two"})
                    break
                except McpError as e:
                    assert "upstream" in e.message, e.message
                    if time.monotonic() > deadline:
                        raise
                    await anyio.sleep(0.2)
            assert res.content[0].text.endswith("two")

    upstream = [start()]

    def restart():
        upstream[0].stop()
        upstream[0] = start()

    try:
        with proxy_http(["--upstream-url", url], name="proxy-http-restart") as (base, _):
            anyio.run(scenario, base, restart)
            import urllib.request

            assert "mcp_gen_ui_upstream_restarts_total 1" in urllib.request.urlopen(base + "/metrics").read().decode()
    finally:
        upstream[0].stop()


def test_an_upstream_that_cannot_start_is_said_at_once_and_how_to_fix_it(tmp_path):
    """A command that does not exist cannot come back by retrying: after two failures in a row
    hosts are told at once to fix the servers file (not to retry shortly after a 10 s wait), and
    the service keeps trying, slowly."""
    import json
    import urllib.request

    missing = str(tmp_path / "no-such-mcp-server")

    def post(base, body, sid=None):
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if sid:
            headers["Mcp-Session-Id"] = sid
        req = urllib.request.Request(base + "/mcp", data=json.dumps(body).encode(), headers=headers, method="POST")
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.headers.get("mcp-session-id"), json.loads(r.read())

    with proxy_http(["--upstream", missing], name="proxy-missing-upstream", ready=False) as (base, proc):
        deadline = time.monotonic() + 20
        while "lasting=true" not in proc.log_path.read_text():  # the second failure in a row
            assert time.monotonic() < deadline, proc.log_path.read_text()[-2000:]
            time.sleep(0.1)
        sid, _ = post(base, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        t0 = time.monotonic()
        _, answer = post(base, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {}}}, sid)
        waited = time.monotonic() - t0
        message = answer["error"]["message"]
        assert "no-such-mcp-server" in message and "check this server's entry in the servers file" in message, message
        assert "retry shortly" not in message, message
        assert waited < 5, f"said at once, not after the 10 s wait for a restart ({waited:.1f} s)"

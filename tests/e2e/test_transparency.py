"""What the proxy does to ids, progress tokens, cancellation, unknown fields and tool list
changes, seen from both ends: a real client, and a recording upstream that logs what it got."""

import json
import sys

import anyio
import mcp.types as types

from conftest import proxy_http
from mcpclient import session

RECORDER = str(__import__("pathlib").Path(__file__).with_name("recording_upstream.py"))


def received(log) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_progress_cancellation_and_unknown_fields(tmp_path):
    log = tmp_path / "upstream.jsonl"
    args = ["--upstream", f"{sys.executable} {RECORDER} {log}"]

    async def scenario(base):
        async with session("mcp", base) as s:
            progress = []

            async def on_progress(p, total, message):
                progress.append(p)

            res = await s.call_tool("slow", {"seconds": 0.3}, progress_callback=on_progress)
            assert res.content[0].text == "slow done"
            assert progress == list(range(10)), progress

            with anyio.move_on_after(0.5):
                await s.call_tool("slow", {"seconds": 5}, progress_callback=on_progress)
            await anyio.sleep(0.5)

            meta = await s.call_tool("meta", {})
            assert meta.structured_content == {"a": [1, 2]}
            assert meta.meta == {"vendor/trace": "abc"}
            assert meta.content[0].meta == {"k": "v"}
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert tools["meta"].meta["vendor/x"] == 1
            assert tools["meta"].meta["ui"]["visibility"] == ["model", "app"]
            assert tools["meta"].meta["ui"]["resourceUri"] == "ui://meta"

    with proxy_http(args, name="proxy-transparency") as (base, _):
        anyio.run(scenario, base)

    msgs = received(log)
    calls = [m for m in msgs if m.get("method") == "tools/call" and m["params"]["name"] == "slow"]
    assert len(calls) == 2
    tokens = [c["params"]["_meta"]["progressToken"] for c in calls]
    assert len(set(tokens)) == 2, "progress tokens are unique upstream"
    cancels = [m for m in msgs if m.get("method") == "notifications/cancelled"]
    assert cancels, "the host's cancellation reached the upstream"
    assert cancels[0]["params"]["requestId"] == calls[1]["id"], "cancellation names the upstream's id for the call"
    ids = [m["id"] for m in msgs if "id" in m]
    assert len(ids) == len(set(ids)), "upstream ids are never reused"


def test_tool_list_changes_reach_the_host(tmp_path):
    log = tmp_path / "upstream.jsonl"
    args = ["--upstream", f"{sys.executable} {RECORDER} {log}"]

    async def scenario(base):
        changed = anyio.Event()
        seen = []

        async def handler(msg):
            seen.append(type(msg).__name__)
            if isinstance(msg, types.ToolListChangedNotification):
                changed.set()

        async with session("mcp", base, message_handler=handler) as s:
            before = {t.name for t in (await s.list_tools()).tools}
            assert "late_tool" not in before
            await s.call_tool("add_tool", {"name": "late_tool"})
            with anyio.move_on_after(5):
                await changed.wait()
            assert changed.is_set(), f"no tools/list_changed notification; got {seen}"
            after = {t.name for t in (await s.list_tools()).tools}
            assert "late_tool" in after
            page = await s.read_resource("ui://late_tool")
            assert "<form" in page.contents[0].text

    with proxy_http(args, name="proxy-list-changed") as (base, _):
        anyio.run(scenario, base)


def test_upstream_env_reaches_the_child():
    from conftest import everything_cmd

    args = ["--upstream", " ".join(everything_cmd("stdio")), "--upstream-env", "MCP_GEN_UI_TEST_VAR=from-the-flag"]

    async def scenario(base):
        async with session("mcp", base) as s:
            res = await s.call_tool("get-env", {})
            assert "from-the-flag" in res.content[0].text

    with proxy_http(args, name="proxy-env") as (base, _):
        anyio.run(scenario, base)

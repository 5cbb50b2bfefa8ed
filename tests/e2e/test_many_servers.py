"""Several servers behind one endpoint (issue 19), end to end with real servers and a real
client: server-everything over stdio, server-memory over stdio, mcp-server-time (PyPI, a
2026-era server) and server-everything in streamableHttp mode, from a Claude Desktop file used
as it is; names, calls, pages, bare names from servers' own apps, elicitation routed to the
right host, a server killed under load, and the servers file reloaded while a host stays."""

import json
import os
import re
import signal
import time
from pathlib import Path

import anyio
import pytest
from mcp import types

from conftest import BIN, EVERYTHING, NODE, NODE_MODULES, ROOT, Proc, everything_http, proxy_http, scrape, metric
from mcpclient import session
from replica_peers import readyz

MEMORY = NODE_MODULES / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
TIME = ROOT / "tests" / ".venv" / "bin" / "mcp-server-time"
PYTHON = ROOT / "tests" / ".venv" / "bin" / "python"
NAMES = Path(__file__).parent / "names_upstream.py"
API_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def claude_desktop_file(tmp_path: Path, http_url: str) -> Path:
    """A Claude Desktop configuration as a user has it: npx-style entries (here the installed
    packages), env, a remote server, and keys of Claude's own that mean nothing to us."""
    cfg = {
        "mcpServers": {
            "everything": {"command": NODE, "args": [str(EVERYTHING), "stdio"]},
            "memory": {"command": NODE, "args": [str(MEMORY)], "env": {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}},
            "time": {"command": str(TIME), "args": ["--local-timezone", "UTC"], "alwaysAllow": ["get_current_time"]},
            "everything-http": {"type": "http", "url": http_url},
        },
        "globalShortcut": "Ctrl+Space",
    }
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(json.dumps(cfg, indent=2))
    return path


def text(res) -> str:
    return "\n".join(c.text for c in res.content if c.type == "text")


def test_four_servers_from_a_claude_desktop_file_as_it_is(tmp_path):
    with everything_http("streamableHttp") as http_url:
        servers = claude_desktop_file(tmp_path, http_url)
        with proxy_http(["--servers-file", str(servers)], name="proxy-many") as (base, proc):
            state = readyz(base)
            assert state["status"] == "ready"
            by_name = {s["name"]: s for s in state["servers"]}
            assert set(by_name) == {"everything", "memory", "time", "everything-http"}
            assert all(s["state"] == "ready" for s in state["servers"]), state
            assert by_name["time"]["protocol"] == "2026-07-28", "mcp-server-time is found to speak the 2026 revision"

            async def scenario():
                async with session("mcp", base) as s:
                    tools = (await s.list_tools()).tools
                    names = [t.name for t in tools if not t.name.startswith("_ui_")]
                    assert all(API_NAME.match(n) for n in names), [n for n in names if not API_NAME.match(n)]
                    for expected in ["everything__echo", "memory__read_graph", "time__get_current_time", "everything-http__echo"]:
                        assert expected in names, expected
                    meta = {t.name: t.meta for t in tools}
                    assert meta["memory__read_graph"]["ui"]["resourceUri"] == "ui://memory/read_graph"
                    assert meta["memory__read_graph"]["ui/resourceUri"] == "ui://memory/read_graph"

                    # A call to each server.
                    assert text(await s.call_tool("everything__echo", {"message": "one"})) == "Echo: one"
                    assert text(await s.call_tool("everything-http__echo", {"message": "two"})) == "Echo: two"
                    made = await s.call_tool("memory__create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote programs"]}]})
                    assert not made.is_error, text(made)
                    assert "Ada" in text(await s.call_tool("memory__read_graph", {}))
                    now = await s.call_tool("time__get_current_time", {"timezone": "UTC"})
                    assert not now.is_error and "UTC" in text(now), text(now)

                    # A page of each server.
                    for tool, uri in [("everything__echo", "ui://everything/echo"), ("memory__read_graph", "ui://memory/read_graph"),
                                      ("time__get_current_time", "ui://time/get_current_time"), ("everything-http__get-sum", "ui://everything-http/get-sum")]:
                        assert meta[tool]["ui"]["resourceUri"] == uri
                        page = (await s.read_resource(uri)).contents[0]
                        assert page.mime_type == "text/html;profile=mcp-app" and tool in page.text, uri

                    # A server's own app calls its tools by bare name: one server has it, it goes there.
                    assert "Ada" in text(await s.call_tool("read_graph", {}))
                    # Two servers have `echo`: refused, naming the candidates.
                    with pytest.raises(Exception) as refused:
                        await s.call_tool("echo", {"message": "which?"})
                    assert "everything__echo" in str(refused.value) and "everything-http__echo" in str(refused.value)

                    # Resources keep working, namespaced reversibly; so do prompts.
                    resources = (await s.list_resources()).resources
                    theirs = [str(r.uri) for r in resources if not str(r.uri).startswith("ui://")]
                    namespaced = re.compile(r"^[a-z]+://(everything|everything-http|memory|time)\+")
                    assert theirs and all(namespaced.match(u) for u in theirs), [u for u in theirs if not namespaced.match(u)]
                    read = await s.read_resource(theirs[0])
                    assert str(read.contents[0].uri) == theirs[0], "the answer carries the URI the host asked for"
                    # A result's resource links and embedded resources name the server too, and
                    # read back through it (issue 64: the as-read fast path is for bare names only).
                    for server in ("everything", "everything-http"):
                        links = await s.call_tool(f"{server}__get-resource-links", {"count": 2})
                        uris = [str(c.uri) for c in links.content if c.type == "resource_link"]
                        assert len(uris) == 2 and all(u.startswith(f"demo://{server}+") for u in uris), uris
                        assert str((await s.read_resource(uris[0])).contents[0].uri) == uris[0]
                        ref = await s.call_tool(f"{server}__get-resource-reference", {"resourceId": 3})
                        embedded = [str(c.resource.uri) for c in ref.content if c.type == "resource"]
                        assert embedded and embedded[0].startswith(f"demo://{server}+"), ref.content
                    templates = (await s.list_resource_templates()).resource_templates
                    assert templates and all("+" in t.uri_template for t in templates)
                    prompts = [p.name for p in (await s.list_prompts()).prompts]
                    assert "everything__simple-prompt" in prompts and "everything-http__simple-prompt" in prompts
                    got = await s.get_prompt("everything__simple-prompt", {})
                    assert got.messages
                    # _ui_list shows how exposed names map to servers.
                    listing = (await s.call_tool("_ui_list", {})).structured_content["tools"]
                    row = next(r for r in listing if r["name"] == "time__get_current_time")
                    assert (row["server"], row["serverToolName"], row["uri"]) == ("time", "get_current_time", "ui://time/get_current_time")

            anyio.run(scenario)
            samples = scrape(base)
            assert metric(samples, "mcp_gen_ui_upstream_connected", server="time") == 1
            assert metric(samples, "mcp_gen_ui_upstream_call_duration_seconds_count", server="memory", method="tools/call") >= 3
            log = proc.log_path.read_text()
            assert "alwaysAllow" in log and "ignored" in log, "Claude's own keys are named once, as a note"


def test_elicitation_reaches_the_host_whose_call_asked(tmp_path):
    servers = tmp_path / "servers.json"
    servers.write_text(json.dumps({"mcpServers": {
        "everything": {"command": NODE, "args": [str(EVERYTHING), "stdio"]},
        "time": {"command": str(TIME), "args": ["--local-timezone", "UTC"]},
    }}))
    with proxy_http(["--servers-file", str(servers)], name="proxy-many-elicit") as (base, _):
        asked = {"a": 0, "b": 0}

        def answering(who):
            async def on_elicit(ctx, params):
                asked[who] += 1
                return types.ElicitResult(action="accept", content={"color": "blue", "number": 7, "pets": "cats"})
            return on_elicit

        async def scenario():
            async with session("mcp", base, elicitation_callback=answering("a")) as a, session("mcp", base, elicitation_callback=answering("b")) as b:
                await b.list_tools()
                res = await a.call_tool("everything__trigger-elicitation-request", {})
                assert asked == {"a": 1, "b": 0}, asked
                assert not res.is_error, text(res)

        anyio.run(scenario)


def child_pids(root: int, needle: str) -> list[int]:
    """Descendants of `root` whose command line contains `needle`."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if needle in cmd and ppid == root:
            pids.append(int(d.name))
    return pids


def test_a_server_killed_repeatedly_touches_only_its_own_tools(tmp_path):
    servers = tmp_path / "servers.json"
    servers.write_text(json.dumps({"mcpServers": {
        "everything": {"command": NODE, "args": [str(EVERYTHING), "stdio"]},
        "memory": {"command": NODE, "args": [str(MEMORY)], "env": {"MEMORY_FILE_PATH": str(tmp_path / "m.jsonl")}},
        "time": {"command": str(TIME), "args": ["--local-timezone", "UTC"]},
    }}))
    with proxy_http(["--servers-file", str(servers)], name="proxy-many-kill") as (base, proc):
        kills = 0
        rounds = 3
        answered = {"memory": 0, "time": 0}
        refused_everything = []

        async def load(s, tool, args, key, stop):
            while not stop.is_set():
                res = await s.call_tool(tool, args)
                assert not res.is_error, (tool, text(res))
                answered[key] += 1

        async def scenario():
            nonlocal kills
            stop = anyio.Event()
            async with session("mcp", base) as s1, session("mcp", base) as s2, session("mcp", base) as s3:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(load, s1, "memory__read_graph", {}, "memory", stop)
                    tg.start_soon(load, s2, "time__get_current_time", {"timezone": "UTC"}, "time", stop)
                    for _ in range(rounds):
                        # Each time it is back, it is killed again.
                        pids = []
                        for _ in range(200):
                            pids = child_pids(proc.p.pid, str(EVERYTHING))
                            if pids:
                                break
                            await anyio.sleep(0.1)
                        for pid in pids:
                            os.kill(pid, signal.SIGKILL)
                            kills += 1
                        try:
                            await s3.call_tool("everything__echo", {"message": "during"})
                        except Exception as e:  # the killed server's own calls may fail, and say whose
                            refused_everything.append(str(e))
                    stop.set()
                # It came back: its tools work again. "ready" alone may still be the state from
                # before the last kill (the loss is noticed a moment later, under load more): wait
                # for the restart that followed each kill, ready.
                def back():
                    body = readyz(base)
                    one = next(s for s in body["servers"] if s["name"] == "everything")
                    return body["status"] == "ready" and one["restarts"] >= rounds

                for _ in range(60):
                    if back():
                        break
                    await anyio.sleep(0.5)
                assert back(), readyz(base)
                assert text(await s3.call_tool("everything__echo", {"message": "back"})) == "Echo: back"

        anyio.run(scenario)
        assert kills >= 3, "the everything server was killed"
        assert answered["memory"] > 10 and answered["time"] > 10, answered
        assert all("everything" in r for r in refused_everything), refused_everything
        restarts = metric(scrape(base), "mcp_gen_ui_upstream_restarts_total", server="everything")
        assert restarts >= 3 and metric(scrape(base), "mcp_gen_ui_upstream_restarts_total", server="memory") == 0


def test_sighup_adds_and_removes_servers_while_a_host_stays(tmp_path):
    servers = tmp_path / "servers.json"
    memory = {"command": NODE, "args": [str(MEMORY)], "env": {"MEMORY_FILE_PATH": str(tmp_path / "m.jsonl")}}
    clock = {"command": str(TIME), "args": ["--local-timezone", "UTC"]}
    servers.write_text(json.dumps({"mcpServers": {"memory": memory}}))
    with proxy_http(["--servers-file", str(servers)], name="proxy-many-reload") as (base, proc):
        changes = []

        async def handler(msg):
            if isinstance(msg, types.ToolListChangedNotification):
                changes.append(time.time())

        async def names(s):
            return {t.name for t in (await s.list_tools()).tools}

        async def wait_for(s, check):
            for _ in range(100):
                if check(await names(s)):
                    return
                await anyio.sleep(0.1)
            raise AssertionError(await names(s))

        async def scenario():
            async with session("mcp", base, message_handler=handler) as s:
                assert "memory__read_graph" in await names(s)
                # Added: it starts, the host hears, its tools work.
                servers.write_text(json.dumps({"mcpServers": {"memory": memory, "time": clock}}))
                os.kill(proc.p.pid, signal.SIGHUP)
                await wait_for(s, lambda n: "time__get_current_time" in n)
                for _ in range(50):
                    if changes:
                        break
                    await anyio.sleep(0.1)
                assert changes, "the host heard tools/list_changed"
                assert not (await s.call_tool("time__get_current_time", {"timezone": "UTC"})).is_error
                # A file that does not parse keeps the running set.
                servers.write_text("{not json")
                os.kill(proc.p.pid, signal.SIGHUP)
                await anyio.sleep(1)
                assert {"memory__read_graph", "time__get_current_time"} <= await names(s)
                # Removed (and noticed without a signal: the file changed).
                heard = len(changes)
                servers.write_text(json.dumps({"mcpServers": {"time": clock}}))
                await wait_for(s, lambda n: "memory__read_graph" not in n)
                for _ in range(50):
                    if len(changes) > heard:
                        break
                    await anyio.sleep(0.1)
                assert len(changes) > heard
                with pytest.raises(Exception) as gone:
                    await s.call_tool("memory__read_graph", {})
                assert "memory__read_graph" in str(gone.value)
                assert not (await s.call_tool("time__get_current_time", {"timezone": "UTC"})).is_error, "the host stayed connected"

        anyio.run(scenario)
        assert "not reloaded" in proc.log_path.read_text()
        assert [s["name"] for s in readyz(base)["servers"]] == ["time"]


def test_names_curation_and_collisions(tmp_path):
    servers = tmp_path / "servers.json"
    servers.write_text(json.dumps({"servers": {
        "names": {"type": "stdio", "command": str(PYTHON), "args": [str(NAMES)],
                  "tools": {"deny": ["delete_*"]}, "rename": {"write_file": "save"},
                  "descriptions": {"save": "ignored: descriptions key the server's own name", "write_file": "Saves a file"},
                  "enabledTools": ["save", "files.*"]},
        "time": {"command": str(TIME), "args": ["--local-timezone", "UTC"]},
    }}))
    with proxy_http(["--servers-file", str(servers)], name="proxy-many-names") as (base, _):
        async def scenario():
            async with session("mcp", base) as s:
                tools = {t.name: t for t in (await s.list_tools()).tools}
                assert all(API_NAME.match(n) for n in tools), list(tools)
                assert "names__save" in tools and tools["names__save"].description == "Saves a file"
                assert not any("delete" in n for n in tools), "a denied tool is not listed"
                long = [n for n in tools if n.startswith("names__summarize")]
                assert len(long) == 1 and len(long[0]) == 64, long
                dotted = [n for n in tools if n.startswith("names__files_read_")]
                assert len(dotted) == 1, list(tools)
                assert "digest of news" in text(await s.call_tool(long[0], {"topic": "news"}))
                assert "read /a" in text(await s.call_tool(dotted[0], {"path": "/a"}))
                assert "wrote 2" in text(await s.call_tool("names__save", {"path": "/x", "text": "hi"}))
                # Pages only for the tools enabledTools names.
                assert tools["names__save"].meta["ui"]["resourceUri"] == "ui://names/save"
                assert (tools[long[0]].meta or {}).get("ui") is None
                # A hidden tool cannot be called, by any name.
                for name in ["names__delete_everything", "delete_everything"]:
                    with pytest.raises(Exception) as hidden:
                        await s.call_tool(name, {})
                    assert "hidden" in str(hidden.value), str(hidden.value)
                # The upstream's own `_ui_refine` is its own tool, not ours, and not listed twice.
                assert [n for n in tools if n == "_ui_refine"] == ["_ui_refine"]
                assert "names___ui_refine" in tools
                assert "upstream refine: x" in text(await s.call_tool("names___ui_refine", {"feedback": "x"}))

        anyio.run(scenario)


@pytest.mark.parametrize("case", ["collision", "both", "bad-type", "input-variable"])
def test_servers_file_errors_name_the_field(tmp_path, case):
    servers = tmp_path / "servers.json"
    args = ["--servers-file", str(servers)]
    entries = {
        "collision": {"mcpServers": {"my server": {"command": "x"}, "my.server": {"command": "y"}}},
        "both": {"mcpServers": {"a": {"command": "x"}}},
        "bad-type": {"mcpServers": {"a": {"type": "websocket", "url": "ws://x"}}},
        "input-variable": {"servers": {"gh": {"command": "x", "env": {"TOKEN": "${input:token}"}}}},
    }[case]
    servers.write_text(json.dumps(entries))
    if case == "both":
        args += ["--demo"]
    p = Proc(f"proxy-servers-error-{case}", [str(BIN), *args])
    try:
        code = p.p.wait(timeout=20)
        err = p.log_path.read_text()
    finally:
        p.stop()
    assert code == 2, err
    expect = {
        "collision": ["my server", "my.server"],
        "both": ["--servers-file", "--demo"],
        "bad-type": ["mcpServers.a.type", "websocket"],
        "input-variable": ["servers.gh.env.TOKEN", "env:NAME"],
    }[case]
    for e in expect:
        assert e in err, (e, err)


def test_the_several_servers_compose_stack_runs_its_servers_file(tmp_path):
    """Item 9: deploy/docker-compose.servers.yml, resolved by docker-compose with an empty .env,
    run as the container would run it: its command, its environment, the servers file it
    mounts (deploy/servers.json, each server's compose address replaced by a local process of
    the same server: server-everything over Streamable HTTP, server-memory behind supergateway)."""
    from conftest import free_port, wait_port
    from test_hardening_streams import compose_config

    empty = tmp_path / "empty.env"
    empty.write_text("")
    cfg = compose_config(ROOT / "deploy" / "docker-compose.servers.yml", empty)
    svc = cfg["services"]["mcp-gen-ui"]
    # Compose v2 gives volumes as objects, v1 as "source:target:mode" strings.
    mounts = {v["target"]: v.get("source") for v in svc["volumes"] if isinstance(v, dict)}
    mounts.update({v.split(":")[1]: v.split(":")[0] for v in svc["volumes"] if isinstance(v, str)})
    assert mounts["/etc/mcp-gen-ui/servers.json"].endswith("deploy/servers.json"), mounts
    file = json.loads((ROOT / "deploy" / "servers.json").read_text())
    assert set(file["mcpServers"]) == {"everything", "memory"}, "the Claude Desktop format, as it is"
    memory_port = free_port()
    gateway = Proc("compose-servers-memory", [str(NODE_MODULES / ".bin" / "supergateway"), "--stdio", f"{NODE} {MEMORY}",
                                              "--outputTransport", "streamableHttp", "--stateful", "--port", str(memory_port), "--logLevel", "none"],
                   env={"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")})
    try:
        wait_port(memory_port)
        with everything_http("streamableHttp") as everything_url:
            local = {"http://everything:3001/mcp": everything_url, "http://memory:3002/mcp": f"http://127.0.0.1:{memory_port}/mcp"}
            for entry in file["mcpServers"].values():
                entry["url"] = local[entry["url"]]
            servers = tmp_path / "servers.json"
            servers.write_text(json.dumps(file))
            args = []
            for prev, a in zip([None, *svc["command"]], svc["command"]):
                if a == "/etc/mcp-gen-ui/servers.json":
                    a = str(servers)
                elif a.startswith("/var/lib/mcp-gen-ui/cache"):
                    a = str(tmp_path / "cache")
                elif (prev or "").endswith("listen"):
                    a = "127.0.0.1:0"
                args.append(a)
            env = {k: "" if v is None else str(v) for k, v in (svc.get("environment") or {}).items()}
            p = Proc("compose-servers-proxy", [str(BIN), *args], env=env)
            try:
                base = p.read_line_matching(r"listening on (http://\S+)").group(1)
                for _ in range(120):
                    state = readyz(base)
                    if state.get("status") == "ready":
                        break
                    time.sleep(0.25)
                assert state["status"] == "ready" and {s["name"] for s in state["servers"]} == {"everything", "memory"}, state

                async def use():
                    async with session("mcp", base) as s:
                        names = {t.name for t in (await s.list_tools()).tools}
                        assert {"everything__echo", "memory__read_graph"} <= names, sorted(names)
                        assert text(await s.call_tool("everything__echo", {"message": "compose"})) == "Echo: compose"
                        page = await s.read_resource("ui://memory/read_graph")
                        assert "<html" in page.contents[0].text.lower()

                anyio.run(use)
            finally:
                p.stop()
    finally:
        gateway.stop()

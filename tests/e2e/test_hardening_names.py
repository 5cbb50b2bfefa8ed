"""Issue 35 acceptance (the third hardening round), each with the input the review used: a
servers file rewritten during the test and an upstream that sends list_changed (names keep
their owner); a servers file with enabledTools and the provider's request count (the _ui_*
tools obey it); a hostile glob against a long tool name (matched in linear time); the compose
files' published ports (docker-compose config); a Redis key count (personal histories go with
their tool)."""

import contextlib
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from conftest import BIN, ROOT, proxy_http
from mcpclient import session
from test_generation import RECORDER, gen_proxy
from test_hardening_streams import compose_config


def servers_file(path: Path, servers: dict) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def recorder(tmp_path, name):
    return {"command": sys.executable, "args": [RECORDER, str(tmp_path / f"{name}.jsonl")]}


def calls_of(log: Path) -> list[str]:
    return [m["params"]["name"] for m in map(json.loads, log.read_text().splitlines()) if m.get("method") == "tools/call"]


def shortened(prefix: str, tool: str) -> str:
    """The name the service shows for a tool whose name is not one the LLM APIs accept:
    shortened and cleaned, ending in 8 hex digits of a hash of the server and the tool."""
    h = hashlib.sha256(f"{prefix}\0{tool}".encode()).digest()[:4].hex()
    clean = "".join(c if c.isalnum() or c in "_-" else "_" for c in f"{prefix}__{tool}")
    return f"{clean[:55]}_{h}"


def structured(res):
    assert not res.is_error, res.content[0].text
    return res.structured_content


# --- 1. a name keeps its owner -------------------------------------------------------------------


def test_a_server_name_with_the_separator_is_refused_at_start_and_on_reload(tmp_path):
    bad = servers_file(tmp_path / "bad.json", {"a": recorder(tmp_path, "a"), "a__b": recorder(tmp_path, "ab")})
    out = subprocess.run([str(BIN), "--servers-file", str(bad)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2, out.stderr
    assert "mcpServers.a__b" in out.stderr and 'may not contain "__"' in out.stderr, out.stderr

    good = servers_file(tmp_path / "servers.json", {"a": recorder(tmp_path, "a")})
    with proxy_http(["--servers-file", str(good)], name="proxy-names-reload") as (base, proc):
        servers_file(good, {"a": recorder(tmp_path, "a"), "a..b": recorder(tmp_path, "ab")})
        deadline = time.time() + 20
        while "may not contain" not in proc.log_path.read_text():
            assert time.time() < deadline, "the reload was refused, naming the server"
            time.sleep(0.2)

        async def names():
            async with session("mcp", base) as s:
                return sorted(t.name for t in (await s.list_tools()).tools if t.name.startswith("a"))
        assert names_ok(anyio.run(names)), "the old servers stay as they were"
        assert "a..b" in proc.log_path.read_text()


def names_ok(names):
    return names and all(n.startswith("a__") and not n.startswith("a__b__") for n in names)


def test_a_name_keeps_its_owner_when_the_upstream_lists_the_same_name(tmp_path):
    """The upstream lists `q.x` (shown shortened, with a public hash), then, by list_changed, a
    tool whose own name is exactly that: the new tool gets its own name, `q.x` steps aside,
    both stay callable, and what was kept for the name (a refinement) does not pass to the
    new tool."""
    log = tmp_path / "s.jsonl"
    servers = servers_file(tmp_path / "servers.json", {"s": {"command": sys.executable, "args": [RECORDER, str(log)]}})
    derived = shortened("s", "q.x")
    collider = derived.removeprefix("s__")
    with proxy_http(["--servers-file", str(servers)], name="proxy-names-owner") as (base, _):
        async def scenario():
            async with session("mcp", base) as s:
                await s.call_tool("s__add_tool", {"name": "q.x"})
                for _ in range(50):
                    if derived in {t.name for t in (await s.list_tools()).tools}:
                        break
                    await anyio.sleep(0.1)
                assert derived in {t.name for t in (await s.list_tools()).tools}
                structured(await s.call_tool("_ui_refine", {"toolName": derived, "feedback": "a refinement of q.x"}))

                await s.call_tool("s__add_tool", {"name": collider})
                for _ in range(50):
                    tools = [t.name for t in (await s.list_tools()).tools]
                    if len([t for t in tools if t.startswith("s__q_x")]) == 2:
                        break
                    await anyio.sleep(0.1)
                assert len(tools) == len(set(tools)), f"two tools with one name: {tools}"
                moved = next(t for t in tools if t.startswith("s__q_x") and t != derived)
                for name in (derived, moved):
                    # The recording upstream answers calls of added tools with an error; what
                    # matters is where each call went.
                    with contextlib.suppress(Exception):
                        await s.call_tool(name, {})
                assert calls_of(log)[-2:] == [collider, "q.x"], "each name reaches its own tool"
                inspect = structured(await s.call_tool("_ui_inspect", {"toolName": derived}))
                assert inspect["refinements"] == [], "the name's refinement did not pass to another tool"

        anyio.run(scenario)


# --- 2. the _ui_* tools obey a server's enabledTools -------------------------------------------


def test_ui_tools_obey_a_servers_enabled_tools_and_name_it(fake, tmp_path):
    servers = servers_file(tmp_path / "servers.json", {"up": {**recorder(tmp_path, "up"), "enabledTools": ["slow"]}})
    with gen_proxy(fake, "openai", upstream=["--servers-file", str(servers)], name="proxy-enabled", tmp_path=tmp_path) as (base, _):
        async def scenario():
            async with session("mcp", base) as s:
                tools = {t.name: t for t in (await s.list_tools()).tools}
                assert tools["up__slow"].meta and tools["up__slow"].meta["ui"]["resourceUri"]
                assert not (tools["up__meta"].meta or {}).get("ui", {}).get("resourceUri"), "meta has no page"
                for name, args in [("_ui_regenerate", {"toolName": "up__meta"}), ("_ui_refine", {"toolName": "up__meta", "feedback": "x"}),
                                   ("_ui_inspect", {"toolName": "up__meta"}), ("_ui_page_status", {"toolName": "up__meta"})]:
                    r = await s.call_tool(name, args)
                    assert r.is_error, f"{name} on a tool without a page: {r.content[0].text}"
                    text = r.content[0].text
                    assert 'enabledTools of server "up"' in text and "generation.enabledTools" not in text, text
                with pytest.raises(Exception) as e:
                    await s.read_resource("ui://up/meta")
                msg = str(e.value)
                assert 'enabledTools of server "up"' in msg and "generation.enabledTools" not in msg, msg
                listed = structured(await s.call_tool("_ui_list", {}))["tools"]
                assert next(t for t in listed if t["name"] == "up__meta")["enabled"] is False

        anyio.run(scenario)
        assert fake.requests == [], "no LLM request for a tool without a page"


# --- 3. globs match in linear time ------------------------------------------------------------


def test_a_hostile_glob_against_a_long_tool_name_does_not_stall_the_service(tmp_path):
    hostile = "a*" * 30 + "b"
    servers = servers_file(tmp_path / "servers.json", {"g": {**recorder(tmp_path, "g"), "tools": {"allow": ["add_tool", hostile]}}})
    with proxy_http(["--servers-file", str(servers)], name="proxy-glob") as (base, _):
        async def scenario():
            async with session("mcp", base) as s:
                await s.call_tool("g__add_tool", {"name": "a" * 1000})
                await s.call_tool("g__add_tool", {"name": "after_the_long_one"})
                t0 = time.monotonic()
                with anyio.fail_after(20):
                    while True:
                        names = [t.name for t in (await s.list_tools()).tools]
                        # Both were matched against the hostile pattern: neither is allowed, and
                        # the list was rebuilt (the long name did not hold it up).
                        if len(names) == 1 + 6:  # add_tool and the _ui_* tools
                            break
                        await anyio.sleep(0.1)
                return time.monotonic() - t0, names

        took, names = anyio.run(scenario)
        assert "g__add_tool" in names and not any(n.startswith("g__a" * 2) for n in names)


# --- 4. what compose publishes ----------------------------------------------------------------


@pytest.mark.parametrize("compose", ["docker-compose.yml", "docker-compose.replicas.yml", "docker-compose.servers.yml"])
def test_compose_publishes_the_dashboards_on_loopback_only(compose, tmp_path):
    empty = tmp_path / "empty.env"
    empty.write_text("")
    cfg = compose_config(ROOT / "deploy" / compose, empty)
    seen = {}
    for name, svc in cfg["services"].items():
        for p in svc.get("ports") or []:
            host_ip = p.get("host_ip", "") if isinstance(p, dict) else (p.split(":")[0] if p.count(":") == 2 else "")
            seen[name] = host_ip
    for dashboard in ("prometheus", "grafana", "jaeger"):
        if dashboard in seen:
            assert seen[dashboard] == "127.0.0.1", f"{compose}: {dashboard} is published on {seen[dashboard] or 'every address'}"
    assert "prometheus" in seen, seen


# --- 5. personal histories leave Redis with their tool ------------------------------------------


def test_personal_histories_leave_redis_with_their_tool(fake, tmp_path):
    from replica_peers import Redis
    from test_teams import ALICE, BOB, A, B, call

    redis = Redis()
    try:
        log = tmp_path / "up.jsonl"
        cfg = {"refinements": {"scope": "principal"}}
        args = ["--redis-url", redis.url, "--auth-token", ALICE, "--auth-token", BOB]
        upstream = ["--upstream", f"{sys.executable} {RECORDER} {log}"]
        with gen_proxy(fake, "openai", upstream=upstream, config=cfg, args=args, name="proxy-personal-redis", tmp_path=tmp_path) as (base, _):
            for token, wish in ((A, "ALICE"), (B, "BOB")):
                assert anyio.run(call, base, token, "_ui_refine", {"toolName": "meta", "feedback": f"{wish}-WISH"})["scope"] == "yours"
            keys = [k for k in redis.cmd("KEYS", "*") if "refinements" in k]
            assert len([k for k in keys if "meta\x1f" in k]) == 2, keys
            anyio.run(call, base, A, "remove_tool", {"name": "meta"})
            deadline = time.time() + 15
            while [k for k in redis.cmd("KEYS", "*") if "refinements" in k and "meta" in k]:
                assert time.time() < deadline, f"left in Redis: {redis.cmd('KEYS', '*')}"
                time.sleep(0.2)
    finally:
        redis.stop()

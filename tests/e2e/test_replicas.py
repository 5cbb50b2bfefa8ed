"""Issue 12 acceptance: several replicas sharing pages, refinements and single flight through a
real redis-server, behind the real haproxy running the shipped deploy/haproxy.cfg. Every replica
is its own mcp-gen-ui process on the demo upstream; one fake LLM (fake_llm.py) counts what the
provider is asked."""

import contextlib
import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

import anyio
import mcp.types as types
import pytest

from conftest import metric, scrape
from fake_llm import page
from mcpclient import session
from replica_peers import DEPLOY, Redis, haproxy, readyz, replicas, wait_redis_status
from test_generation import read_ui


@pytest.fixture
def redis():
    r = Redis()
    yield r
    r.stop()


def structured(res):
    assert not res.is_error, res.content[0].text
    return res.structured_content


def classifications(fake):
    return [r for r in fake.requests if r["kind"] == "classify"]


def test_forty_cold_reads_across_two_replicas_make_one_page(fake, redis, tmp_path):
    fake.default = {"html": page("MADE-ONCE"), "delay": 1.0}
    with replicas(fake, redis, 2, tmp_path, name="rep-flight") as reps:
        async def go():
            async with session("mcp", reps[0][0]) as a, session("mcp", reps[1][0]) as b:
                texts = []

                async def one(s):
                    r = await s.read_resource("ui://get_forecast")
                    texts.append(r.contents[0].text)

                async with anyio.create_task_group() as tg:
                    for i in range(40):
                        tg.start_soon(one, (a, b)[i % 2])
                return texts

        texts = anyio.run(go)
        assert len(texts) == 40 and all("MADE-ONCE" in t for t in texts)
        assert len(fake.generations()) == 1, f"{len(fake.generations())} page requests for one key across two replicas"
        assert len(classifications(fake)) == 1, "one classification too"
        waits = [metric(scrape(base), "mcp_gen_ui_lease_waits_total", outcome="page") for base, _ in reps]
        assert sorted(waits) == [0, 1], f"one replica made the page, the other waited for it: {waits}"


def test_pages_and_refinements_travel_between_replicas(fake, redis, tmp_path):
    fake.script = [{"html": page("FIRST-PAGE")}, {"html": page("REFINED-PAGE")}]
    with replicas(fake, redis, 2, tmp_path, name="rep-refine") as reps:
        (a_base, _), (b_base, _) = reps

        async def go():
            updated = anyio.Event()

            async def on_b(msg):
                if isinstance(msg, types.ResourceUpdatedNotification) and str(msg.params.uri) == "ui://get_forecast":
                    updated.set()

            async with session("mcp", a_base) as a, session("mcp", b_base) as b, session("mcp", b_base, message_handler=on_b) as watcher:
                await watcher.subscribe_resource("ui://get_forecast")
                first = await a.read_resource("ui://get_forecast")
                assert "FIRST-PAGE" in first.contents[0].text
                asked = len(fake.requests)
                on_b_text = (await b.read_resource("ui://get_forecast")).contents[0]
                assert "FIRST-PAGE" in on_b_text.text and on_b_text.meta["mcp-gen-ui"]["kind"] in ("generated", "repaired")
                assert len(fake.requests) == asked, "B serves A's page without asking the LLM"
                # B now holds a ready result for the page: the refinement through A must replace it.
                r = structured(await a.call_tool("_ui_refine", {"toolName": "get_forecast", "feedback": "show the days as a table"}))
                assert r["refinements"] == 1
                after = await b.read_resource("ui://get_forecast")
                assert "REFINED-PAGE" in after.contents[0].text, "B serves the refined page at its next read"
                with anyio.move_on_after(5):
                    await updated.wait()
                assert updated.is_set(), "a host subscribed on B heard resources/updated"
                info = structured(await b.call_tool("_ui_inspect", {"toolName": "get_forecast"}))
                assert [x["feedback"] for x in info["refinements"]] == ["show the days as a table"]
                assert info["cached"] is True and info["kind"] in ("generated", "repaired")
                listing = structured(await b.call_tool("_ui_list", {}))["tools"]
                assert next(t for t in listing if t["name"] == "get_forecast")["refinements"] == 1

        anyio.run(go)
        assert len(fake.generations()) == 2, "one page, one refined page: nothing made twice"
        assert "show the days as a table" in json.dumps(fake.generations()[-1]["body"])


def test_a_replica_killed_while_generating_is_taken_over(fake, redis, tmp_path):
    fake.script = [{"html": page("FROM-A"), "delay": 60}]
    fake.default = {"html": page("FROM-B")}
    budget = 10.0
    with replicas(fake, redis, 2, tmp_path, name="rep-kill", config={"generation": {"timeoutMs": int(budget * 1000)}}) as reps:
        (a_base, a_proc), (b_base, _) = reps

        def read_quietly(base):
            with contextlib.suppress(BaseException):
                read_ui(base, "get_forecast")

        threading.Thread(target=read_quietly, args=(a_base,), daemon=True).start()
        deadline = time.time() + 10
        while not fake.generations():
            assert time.time() < deadline, "A never asked for the page"
            time.sleep(0.05)
        got = {}

        def read_b():
            t0 = time.monotonic()
            got["html"], got["meta"] = read_ui(b_base, "get_forecast")
            got["elapsed"] = time.monotonic() - t0

        tb = threading.Thread(target=read_b, daemon=True)
        tb.start()
        time.sleep(0.7)  # B finds A's lease and waits on it
        assert not got, "B waits while A holds the lease"
        os.killpg(a_proc.p.pid, signal.SIGKILL)
        tb.join(budget + 5)
        assert got, "B's read finished"
        assert got["elapsed"] < budget, f"B answered within its {budget}s budget ({got['elapsed']:.1f}s)"
        # Nothing says how fast another replica writes: B's read may have taken the provisional
        # page after a moment (issue 43); the page B takes over is then on its next reads.
        html, meta = got["html"], got["meta"]
        deadline = time.time() + budget
        while "FROM-B" not in html and time.time() < deadline:
            time.sleep(0.3)
            html, meta = read_ui(b_base, "get_forecast")
        assert "FROM-B" in html and meta["kind"] in ("generated", "repaired"), meta
        assert len(fake.generations()) == 2, "one more page request after A died, no more"
        assert len(classifications(fake)) == 1, "A's classification reached Redis before it died"
        m = scrape(b_base)
        assert metric(m, "mcp_gen_ui_lease_takeovers_total") == 1
        assert metric(m, "mcp_gen_ui_lease_waits_total", outcome="takeover") == 1


def test_redis_stopped_under_load(fake, redis, tmp_path):
    fake.default = {"html": page("PAGE")}
    with replicas(fake, redis, 2, tmp_path, name="rep-redis-down") as reps:
        (a_base, _), (b_base, _) = reps
        read_ui(a_base, "get_forecast")
        read_ui(b_base, "get_forecast")
        assert len(fake.generations()) == 1

        async def go():
            done = anyio.Event()
            ok = [0, 0]
            errors = []

            async def load(s, i):
                while not done.is_set():
                    try:
                        r = await s.call_tool("get_current_weather", {"city": "Paris"})
                        if r.is_error:
                            errors.append(r.content[0].text)
                        else:
                            ok[i] += 1
                    except Exception as e:  # a broken call is a failure, not the end of the test
                        errors.append(repr(e))

            async with session("mcp", a_base) as a, session("mcp", b_base) as b:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(load, a, 0)
                    tg.start_soon(load, b, 1)
                    await anyio.sleep(0.5)
                    await anyio.to_thread.run_sync(redis.kill)
                    before = list(ok)
                    # Reads go on: A's page from memory on both, a cold page made by a replica on its own.
                    t0 = time.monotonic()
                    for s in (a, b):
                        c = (await s.read_resource("ui://get_forecast")).contents[0]
                        assert "PAGE" in c.text
                    cold = (await b.read_resource("ui://set_units")).contents[0]
                    assert "<html" in cold.text.lower()
                    assert time.monotonic() - t0 < 5, "reads do not wait on the dead Redis"
                    await anyio.sleep(1.5)
                    for base in (a_base, b_base):
                        r = await anyio.to_thread.run_sync(readyz, base)
                        assert r["status"] == "ready" and r["redis"]["status"] == "degraded", r
                    during = [ok[0] - before[0], ok[1] - before[1]]
                    assert min(during) > 5, f"tool calls kept succeeding through both replicas while Redis was down: {during}"
                    await anyio.to_thread.run_sync(redis.start)
                    for base in (a_base, b_base):
                        await anyio.to_thread.run_sync(wait_redis_status, base, "ok")
                    # Sharing resumes without restarting the replicas.
                    asked = len(fake.generations())
                    first = (await a.read_resource("ui://get_weather_map")).contents[0]
                    second = (await b.read_resource("ui://get_weather_map")).contents[0]
                    assert first.text == second.text
                    assert len(fake.generations()) == asked + 1, "B got A's new page through Redis"
                    done.set()
            assert not errors, errors[:3]
            return ok

        ok = anyio.run(go)
        assert min(ok) > 10
        m = scrape(a_base)
        assert sum(v for (name, _), v in m.items() if name == "mcp_gen_ui_redis_errors_total") > 0


def test_through_haproxy_sessions_stay_with_their_replica(fake, redis, tmp_path):
    with replicas(fake, redis, 2, tmp_path, name="rep-lb") as reps, haproxy([b for b, _ in reps]) as lb:
        async def go():
            calls = 0
            for i in range(8):
                async with session("mcp", lb) as s:
                    for j in range(25):
                        r = await s.call_tool("get_current_weather", {"city": f"City{i}-{j}"})
                        assert not r.is_error, r.content[0].text
                        calls += 1
                    if i == 0:
                        page_text = (await s.read_resource("ui://get_forecast")).contents[0].text
                        assert "<html" in page_text.lower()
            for i in range(6):
                async with session("sse", lb) as s:
                    for j in range(5):
                        r = await s.call_tool("get_forecast", {"city": "Oslo", "days": 2})
                        assert not r.is_error, r.content[0].text
            return calls

        assert anyio.run(go) == 200
        inits = [metric(scrape(b), "mcp_gen_ui_requests_total", method="initialize", outcome="ok") for b, _ in reps]
        assert all(n > 0 for n in inits), f"new sessions went to both replicas: {inits}"
        assert sum(inits) == 14


def test_a_session_owned_by_another_replica_is_404_at_once(fake, redis, tmp_path):
    with replicas(fake, redis, 2, tmp_path, name="rep-404") as reps:
        (a_base, _), (b_base, _) = reps
        init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "clientInfo": {"name": "t", "version": "1"}, "capabilities": {}}}).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        with urllib.request.urlopen(urllib.request.Request(a_base + "/mcp", init, headers), timeout=5) as r:
            sid = r.headers["mcp-session-id"]
        ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode()
        for url, hdrs in [(b_base + "/mcp", {**headers, "Mcp-Session-Id": sid}), (b_base + f"/messages?sessionId={sid}", {"Content-Type": "application/json"})]:
            t0 = time.monotonic()
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(urllib.request.Request(url, ping, hdrs), timeout=5)
            assert e.value.code == 404 and time.monotonic() - t0 < 1
            body = json.loads(e.value.read())
            assert body["jsonrpc"] == "2.0" and body["error"]["code"] < 0 and sid in body["error"]["message"]
        # The /sse answer names its session in a header too, for the load balancer.
        with urllib.request.urlopen(urllib.request.Request(b_base + "/sse", headers={"Accept": "text/event-stream"}), timeout=5) as r:
            first = r.readline().decode() + r.readline().decode()
            assert r.headers["mcp-session-id"] and f"sessionId={r.headers['mcp-session-id']}" in first


def test_shipped_replica_deploy_files_are_valid():
    out = subprocess.run(["docker-compose", "-f", str(DEPLOY / "docker-compose.replicas.yml"), "config"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    resolved = out.stdout
    for service in ["redis", "mcp-gen-ui-1", "mcp-gen-ui-2", "haproxy", "prometheus", "grafana", "everything"]:
        assert re.search(rf"^  {re.escape(service)}:$", resolved, re.M), service
    assert len(re.findall(r"- --redis-url\s+- redis://redis:6379", resolved)) == 2, "both replicas share the compose Redis"
    assert "haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg" in resolved
    assert "MCP_GEN_UI_AUTH_TOKEN" in resolved and "sk-" not in resolved
    out = subprocess.run(["promtool", "check", "config", str(DEPLOY / "prometheus-replicas.yml")], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    prom = (DEPLOY / "prometheus-replicas.yml").read_text()
    assert "mcp-gen-ui-1:9464" in prom and "mcp-gen-ui-2:9464" in prom
    out = subprocess.run(["haproxy", "-c", "-f", str(DEPLOY / "haproxy.cfg")], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr

"""Issue 9 acceptance (items 1, 2, 3, 4, 6, 7, 11 of the hardening spec): what a wrapped server
sees of the service's environment, what a hostile provider header, a panic, a bad upstream byte,
an oversized or never-coming answer do to the service, what expires and what persists, and what
operational output says about the upstream. Each test drives the real binary through the Python
`mcp` SDK; `bad_upstream.py` is the misbehaving stdio server and `fake_llm.py` the provider."""

import json
import shlex
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from conftest import EVERYTHING, NODE, Proc, everything_cmd, free_port, metric, proxy_http, scrape, wait_port
from fake_llm import page
from mcpclient import session
from test_generation import gen_proxy

BAD = str(Path(__file__).with_name("bad_upstream.py"))
UPSTREAM_UNAVAILABLE = -32001


def bad_upstream(*extra: str) -> list[str]:
    """--upstream running bad_upstream.py with these extra arguments."""
    return ["--upstream", shlex.join([sys.executable, BAD, *extra])]


def write_config(tmp_path: Path, cfg: dict) -> str:
    path = tmp_path / f"config-{time.time_ns()}.json"
    path.write_text(json.dumps(cfg))
    return str(path)


def text_of(res) -> str:
    assert not res.is_error, res.content[0].text
    return res.content[0].text


def structured(res):
    assert not res.is_error, res.content[0].text
    return res.structured_content


async def call_bounded(s, name: str, args: dict, limit: float, **kwargs):
    """call_tool that turns a hang into an assertion (today's bugs hang instead of failing)."""
    with anyio.move_on_after(limit) as scope:
        return await s.call_tool(name, args, **kwargs)
    assert not scope.cancelled_caught, f"{name} got no answer within {limit}s: the call hangs"


async def read_bounded(s, uri: str, limit: float = 20):
    """read_resource that turns a hang or an error answer into an assertion naming the URI."""
    with anyio.move_on_after(limit) as scope:
        try:
            return await s.read_resource(uri)
        except MCPError as e:
            raise AssertionError(f"read of {uri} failed: {e.message}") from e
    assert not scope.cancelled_caught, f"read of {uri} got no answer within {limit}s"


def readyz(base: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(base + "/readyz", timeout=5) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def banner(proc: Proc) -> str:
    """The rest of the startup banner on stdout (after the `listening on` line)."""
    lines = []

    def read():
        for line in proc.p.stdout:
            lines.append(line)
            if "UI provider" in line:
                return

    # A thread, so that a banner without that last line costs 3 s instead of a hang.
    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(timeout=3)
    return "".join(lines)


# ---------------------------------------------------------------- 1. upstream environment

SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-MARKER-SECRET-1",
    "OPENAI_API_KEY": "sk-openai-MARKER-SECRET-2",
    "OLLAMA_API_KEY": "ollama-MARKER-SECRET-3",
    "MCP_GEN_UI_MODEL": "model-MARKER-SECRET-4",
}


def upstream_env(base: str) -> dict:
    async def go():
        async with session("mcp", base) as s:
            names = {t.name for t in (await s.list_tools()).tools}
            assert "get-env" in names, sorted(names)
            return json.loads(text_of(await call_bounded(s, "get-env", {}, 20)))

    return anyio.run(go)


def test_stdio_upstream_gets_a_safe_environment():
    """The wrapped server sees PATH and the configured KEY=VALUE, never the service's API keys
    or MCP_GEN_UI_* variables (server-everything's get-env tool would hand them to any client)."""
    args = ["--upstream", " ".join(everything_cmd("stdio")), "--provider", "offline", "--upstream-env", "FOO=bar"]
    with proxy_http(args, name="proxy-env-safe", env=SECRETS) as (base, _):
        env = upstream_env(base)
    leaked = {k: v for k, v in env.items() if k in SECRETS or k.startswith("MCP_GEN_UI_") or "MARKER-SECRET" in v}
    assert not leaked, f"the service's secrets reached the upstream: {sorted(leaked)}"
    assert env.get("FOO") == "bar", "--upstream-env KEY=VALUE reaches the upstream"
    assert env.get("PATH"), "PATH is part of the safe base environment"


def test_upstream_env_key_passes_the_service_value():
    """`--upstream-env KEY` (no `=`) hands the service's own value of KEY to the upstream, next to
    KEY=VALUE entries, while the secrets still stay behind."""
    args = ["--upstream", " ".join(everything_cmd("stdio")), "--provider", "offline", "--upstream-env", "FOO=bar", "--upstream-env", "PASSME"]
    with proxy_http(args, name="proxy-env-pass", env={**SECRETS, "PASSME": "passed-value"}) as (base, _):
        env = upstream_env(base)
    assert env.get("PASSME") == "passed-value" and env.get("FOO") == "bar" and env.get("PATH")
    assert not [k for k in env if k in SECRETS or k.startswith("MCP_GEN_UI_")], sorted(env)


# ---------------------------------------------------------------- 2. no input kills a capability


def test_absurd_retry_after_does_not_stop_the_generation_queue(fake, tmp_path):
    """A 429 with `Retry-After: 10^20` gives that read the template (RATE_LIMIT); later reads of
    other tools and a regenerate of the same tool still reach the provider."""
    fake.script = [{"status": 429, "type": "rate_limit_error", "headers": {"retry-after": "100000000000000000000"}}]
    fake.default = {"html": page("AFTER-THE-429")}
    cfg = {"generation": {"timeoutMs": 4000, "maxRetries": 2}}
    with gen_proxy(fake, "anthropic", config=cfg, name="proxy-retry-after", tmp_path=tmp_path) as (base, _):
        async def go():
            async with session("mcp", base) as s:
                first = (await read_bounded(s, "ui://get_forecast")).contents[0]
                assert first.meta["mcp-gen-ui"]["kind"] == "template" and first.meta["mcp-gen-ui"]["fallbackReason"] == "RATE_LIMIT", first.meta
                other = (await read_bounded(s, "ui://get_current_weather")).contents[0]
                assert "AFTER-THE-429" in other.text, other.meta
                regen = structured(await call_bounded(s, "_ui_regenerate", {"toolName": "get_forecast"}, 20))
                assert regen["toolName"] == "get_forecast"
                again = (await read_bounded(s, "ui://get_forecast")).contents[0]
                assert "AFTER-THE-429" in again.text, again.meta

        try:
            anyio.run(go)
        except MCPError as e:
            pytest.fail(f"a read after the 429 failed: {e.message}")


def test_a_panicking_generation_ends_in_the_template(fake, tmp_path, monkeypatch):
    """Fault injection: the generation of get_forecast panics; its read gets the template with
    reason `internal` (counted), and the queue keeps generating other tools."""
    monkeypatch.setenv("MCP_GEN_UI_FAULTS", "generation_panic:get_forecast")  # the proxy inherits it
    with gen_proxy(fake, "openai", name="proxy-gen-panic", tmp_path=tmp_path) as (base, _):
        async def go():
            async with session("mcp", base) as s:
                broken = (await read_bounded(s, "ui://get_forecast")).contents[0]
                assert broken.meta["mcp-gen-ui"]["kind"] == "template", broken.meta
                assert broken.meta["mcp-gen-ui"]["fallbackReason"] == "internal", broken.meta
                assert "<form" in broken.text
                fine = (await read_bounded(s, "ui://get_current_weather")).contents[0]
                assert fine.meta["mcp-gen-ui"]["kind"] in ("generated", "repaired") and "GENERATED-PAGE" in fine.text, fine.meta

        anyio.run(go)
        assert metric(scrape(base), "mcp_gen_ui_fallbacks_total", reason="internal") == 1


def test_a_ui_cache_panic_restarts_the_actor(fake, tmp_path, monkeypatch):
    """Fault injection: the UiCache actor panics once in a lookup; it is restarted (counted in
    mcp_gen_ui_actor_restarts_total{actor="ui_cache"}) and reads keep answering."""
    monkeypatch.setenv("MCP_GEN_UI_FAULTS", "ui_cache_panic_once")  # the proxy inherits it
    with gen_proxy(fake, "openai", name="proxy-cache-panic", tmp_path=tmp_path) as (base, _):
        async def go():
            async with session("mcp", base) as s:
                for tool in ("get_forecast", "get_current_weather", "get_forecast"):
                    content = (await read_bounded(s, f"ui://{tool}")).contents[0]
                    assert "<html" in content.text.lower(), content.meta

        try:
            anyio.run(go)
        except MCPError as e:
            pytest.fail(f"a read failed around the UiCache panic: {e.message}")
        samples = scrape(base)
        assert metric(samples, "mcp_gen_ui_actor_restarts_total", actor="ui_cache") == 1, {k: v for k, v in samples.items() if "restarts" in k[0]}


# ---------------------------------------------------------------- 3. bad frames, big messages


def test_bad_upstream_lines_are_skipped_and_counted(tmp_path):
    """Before its answer the upstream writes a non-UTF-8 line, a non-JSON line and two JSON lines
    that are not JSON-RPC: the call still gets its answer, the four lines are counted as bad
    frames, and the link was never restarted."""
    with proxy_http(bad_upstream(), name="proxy-bad-frames") as (base, _):
        async def go():
            async with session("mcp", base) as s:
                assert text_of(await call_bounded(s, "garbage_then_answer", {"text": "survived"}, 10)) == "survived"
                assert text_of(await call_bounded(s, "echo", {"text": "still here"}, 10)) == "still here"

        anyio.run(go)
        samples = scrape(base)
        assert metric(samples, "mcp_gen_ui_upstream_bad_frames_total") >= 3, "bad lines are counted"
        assert metric(samples, "mcp_gen_ui_upstream_restarts_total") == 0, "the link kept reading: no restart"


def test_an_oversized_upstream_message_fails_only_its_call(tmp_path):
    """With upstream.maxMessageBytes = 200000, a 1 MB answer fails that call with an error naming
    the setting; the link stays up and the next call works."""
    cfg = write_config(tmp_path, {"upstream": {"maxMessageBytes": 200000}})
    with proxy_http([*bad_upstream(), "--config", cfg], name="proxy-max-message") as (base, _):
        async def go():
            async with session("mcp", base) as s:
                with pytest.raises(MCPError) as e:
                    await call_bounded(s, "big", {"bytes": 1_000_000}, 15)
                assert e.value.code == UPSTREAM_UNAVAILABLE and "upstream.maxMessageBytes" in e.value.message, e.value.message
                assert len(text_of(await call_bounded(s, "big", {"bytes": 1000}, 10))) == 1000
                assert text_of(await call_bounded(s, "echo", {"text": "after"}, 10)) == "after"

        anyio.run(go)
        assert metric(scrape(base), "mcp_gen_ui_upstream_restarts_total") == 0


def test_a_vanished_http_upstream_fails_the_call_in_flight():
    """Issue item 3, HTTP side: the Streamable HTTP upstream dies while a call's answer stream is
    open; the stream breaking off fails that call at once (not after requestTimeoutMs)."""
    port = free_port()
    upstream = Proc(f"everything-vanish-{port}", [NODE, str(EVERYTHING), "streamableHttp"], env={"PORT": str(port)})
    try:
        wait_port(port)
        with proxy_http(["--upstream-url", f"http://127.0.0.1:{port}/mcp"], name="proxy-http-vanish") as (base, _):
            async def go():
                async with session("mcp", base) as s:
                    outcome = {}

                    async def in_flight():
                        try:
                            await s.call_tool("trigger-long-running-operation", {"duration": 60, "steps": 3})
                            outcome["error"] = None
                        except MCPError as e:
                            outcome["error"] = e.message
                        outcome["at"] = time.monotonic()

                    async with anyio.create_task_group() as tg:
                        tg.start_soon(in_flight)
                        await anyio.sleep(1.0)
                        upstream.stop()
                        stopped = time.monotonic()
                        with anyio.move_on_after(5):
                            while "at" not in outcome:
                                await anyio.sleep(0.05)
                        tg.cancel_scope.cancel()
                    assert "at" in outcome, "the call in flight still waits 5 s after its upstream died"
                    assert outcome["error"], "the call in flight should fail"
                    assert outcome["at"] - stopped < 3, f"the call failed {outcome['at'] - stopped:.1f}s after the upstream died"

            anyio.run(go)
    finally:
        upstream.stop()


# ---------------------------------------------------------------- 4. nothing waits forever


def logged(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []


def test_a_call_that_never_answers_times_out_and_is_cancelled(tmp_path):
    """MCP_GEN_UI_UPSTREAM_TIMEOUT_MS=1500: a call the upstream never answers gets a -32001 error
    naming upstream.requestTimeoutMs within a few seconds, and the upstream gets
    notifications/cancelled for its own id of that request."""
    log = tmp_path / "up.jsonl"
    with proxy_http(bad_upstream("--log", str(log)), name="proxy-timeout", env={"MCP_GEN_UI_UPSTREAM_TIMEOUT_MS": "1500"}) as (base, _):
        async def go():
            async with session("mcp", base) as s:
                t0 = time.monotonic()
                with pytest.raises(MCPError) as e:
                    await call_bounded(s, "wait", {}, 10)
                elapsed = time.monotonic() - t0
                assert e.value.code == UPSTREAM_UNAVAILABLE and "upstream.requestTimeoutMs" in e.value.message, e.value.message
                assert 1.4 <= elapsed < 5, f"timed out after {elapsed:.2f}s for a 1.5 s timeout"

        anyio.run(go)
        call = next(m for m in logged(log) if m.get("method") == "tools/call" and m["params"]["name"] == "wait")
        deadline = time.time() + 5
        while not [m for m in logged(log) if m.get("method") == "notifications/cancelled" and m["params"].get("requestId") == call["id"]]:
            assert time.time() < deadline, f"no notifications/cancelled for upstream id {call['id']!r}: {logged(log)[-3:]}"
            time.sleep(0.05)


def test_progress_resets_the_upstream_timeout(tmp_path):
    """--upstream-timeout-ms 1500: a 3.5 s call that sends progress every 0.3 s (the host gave a
    progress token) succeeds, while the same 3.5 s call without progress times out."""
    with proxy_http([*bad_upstream(), "--upstream-timeout-ms", "1500"], name="proxy-timeout-progress") as (base, _):
        async def go():
            async with session("mcp", base) as s:
                seen = []

                async def on_progress(p, total, message):
                    seen.append(p)

                res = await call_bounded(s, "wait", {"seconds": 3.5, "progress_interval": 0.3}, 15, progress_callback=on_progress)
                assert text_of(res) == "waited" and len(seen) >= 5, seen
                with pytest.raises(MCPError) as e:
                    await call_bounded(s, "wait", {"seconds": 3.5}, 10)
                assert "upstream.requestTimeoutMs" in e.value.message, e.value.message

        anyio.run(go)


# ---------------------------------------------------------------- 6. degraded pages expire

EXPIRING = {"generation": {"maxRetries": 0}, "cache": {"fallbackTtlSecs": 1}}


def wait_past(expires_at_ms) -> None:
    """Sleep until the page's expiresAt (unix ms) has passed, plus a margin."""
    time.sleep(max(0.0, expires_at_ms / 1000 - time.time()) + 0.3)


def test_a_transient_fallback_expires(fake, tmp_path):
    """A 500 (no retries) gives the template, cached for at most cache.fallbackTtlSecs = 1 s with
    its expiresAt in the read's _meta; the first read after that asks the provider again and
    serves the generated page."""
    fake.script = [{"status": 500, "type": "server_error"}]
    fake.default = {"html": page("RECOVERED-PAGE")}
    with gen_proxy(fake, "openai", config=EXPIRING, name="proxy-fallback-ttl", tmp_path=tmp_path) as (base, _):
        async def go():
            async with session("mcp", base) as s:
                first = (await read_bounded(s, "ui://get_forecast")).contents[0].meta["mcp-gen-ui"]
                assert first["kind"] == "template" and first["fallbackReason"] == "SERVER_ERROR", f"{first}"
                assert isinstance(first.get("expiresAt"), (int, float)), f"a transient fallback carries expiresAt (unix ms): {first}"
                assert first["expiresAt"] <= time.time() * 1000 + 1500, f"expiresAt is at most fallbackTtlSecs = 1 s away: {first}"
                cached = (await read_bounded(s, "ui://get_forecast")).contents[0].meta["mcp-gen-ui"]
                assert cached["kind"] == "template" and len(fake.generations()) == 1, "before expiry the template is served from the cache"
                wait_past(first["expiresAt"])
                later = (await read_bounded(s, "ui://get_forecast")).contents[0]
                assert "RECOVERED-PAGE" in later.text, later.meta
                assert len(fake.generations()) == 2
                assert later.meta["mcp-gen-ui"].get("expiresAt") is None, "a generated page does not expire early"

        anyio.run(go)


def test_a_permanent_fallback_stays(fake, tmp_path):
    """A 400 (invalid request) gives the template with expiresAt null: after the transient TTL
    has passed, the read still serves it and the provider is not asked again."""
    fake.script = [{"status": 400, "type": "invalid_request_error"}]
    with gen_proxy(fake, "openai", config=EXPIRING, name="proxy-fallback-permanent", tmp_path=tmp_path) as (base, _):
        async def go():
            async with session("mcp", base) as s:
                first = (await read_bounded(s, "ui://get_forecast")).contents[0].meta["mcp-gen-ui"]
                assert first["fallbackReason"] == "INVALID_REQUEST", f"{first}"
                assert "expiresAt" in first and first["expiresAt"] is None, f"a permanent fallback has expiresAt null: {first}"
                await anyio.sleep(1.6)
                later = (await read_bounded(s, "ui://get_forecast")).contents[0].meta["mcp-gen-ui"]
                assert later["kind"] == "template" and later["fallbackReason"] == "INVALID_REQUEST", later
                assert len(fake.generations()) == 1, "a permanent failure is not retried until _ui_regenerate"

        anyio.run(go)


# ---------------------------------------------------------------- 7. refinements persist


def test_refinements_survive_a_restart(fake, tmp_path):
    """With --cache-dir, a refined page and its history persist: a new process on the same folder
    serves the refined page with no LLM request at all (classification included), and _ui_inspect
    shows the refinement."""
    cache = tmp_path / "cache"
    args = ["--cache-dir", str(cache)]
    fake.script = [{"html": page("FIRST-PAGE")}, {"html": page("REFINED-PAGE")}]
    fake.default = {"html": page("REGENERATED-AFTER-RESTART")}
    feedback = "show the days as a table"

    with gen_proxy(fake, "openai", args=args, name="proxy-persist-1", tmp_path=tmp_path) as (base, _):
        async def refine():
            async with session("mcp", base) as s:
                assert "FIRST-PAGE" in (await read_bounded(s, "ui://get_forecast")).contents[0].text
                r = structured(await call_bounded(s, "_ui_refine", {"toolName": "get_forecast", "feedback": feedback}, 20))
                assert r["refinements"] == 1
                assert "REFINED-PAGE" in (await read_bounded(s, "ui://get_forecast")).contents[0].text

        anyio.run(refine)

    before = len(fake.requests)
    with gen_proxy(fake, "openai", args=args, name="proxy-persist-2", tmp_path=tmp_path) as (base, _):
        async def after_restart():
            async with session("mcp", base) as s:
                content = (await read_bounded(s, "ui://get_forecast")).contents[0]
                new = [r["kind"] for r in fake.requests[before:]]
                assert "REFINED-PAGE" in content.text, f"after the restart the read served {content.meta}; LLM requests: {new}"
                assert not new, f"the refined page should come from disk, but the LLM got: {new}"
                info = structured(await call_bounded(s, "_ui_inspect", {"toolName": "get_forecast"}, 10))
                assert [r["feedback"] for r in info["refinements"]] == [feedback], info["refinements"]

        anyio.run(after_restart)


# ---------------------------------------------------------------- 11. nothing secret in output


def host_error_text(e: MCPError) -> str:
    return f"{e.message} {json.dumps(e.data)}"


def test_stdio_upstream_is_named_by_program_only(tmp_path):
    """A stdio upstream with a secret argument dies and stays down: /readyz, the banner, the
    log and the errors hosts get (in flight and while down) say `stdio: <program>` and never
    show its arguments."""
    down = tmp_path / "down"
    program = Path(sys.executable).name
    with proxy_http(bad_upstream("--token", "SECRET-ARG-123", "--down-file", str(down)), name="proxy-redact-stdio") as (base, proc):
        shown = banner(proc)

        async def go():
            async with session("mcp", base) as s:
                down.touch()  # from now on every restart of the upstream exits at once
                errors = []
                for name in ("die", "echo"):  # in flight when it dies, then while it is down
                    try:
                        await call_bounded(s, name, {"text": "x"}, 20)
                    except MCPError as e:
                        errors.append(host_error_text(e))
                return errors

        errors = anyio.run(go)
        assert len(errors) == 2, f"both calls should fail: {errors}"
        deadline = time.time() + 10
        while (status := readyz(base))[0] != 503:
            assert time.time() < deadline, f"/readyz still {status}"
            time.sleep(0.1)
        body = status[1]
        log = proc.log_path.read_text()
        for where, text in [("/readyz", json.dumps(body)), ("banner", shown), ("log", log), *[("host error", t) for t in errors]]:
            assert "SECRET-" not in text, f"{where} shows the upstream's arguments: {text[:2000]}"
            assert "bad_upstream.py" not in text, f"{where} shows the upstream's arguments: {text[:2000]}"
        assert body["upstream"] == f"stdio: {program}", body


def test_http_upstream_is_named_by_transport_and_origin_only(tmp_path):
    """A Streamable HTTP upstream reached with `?key=SECRET-Q` and an Authorization header is
    stopped: /readyz, the banner, the log and the error a host gets for a call name it
    `streamable-http: http://127.0.0.1:PORT`, with no path, query or header value."""
    port = free_port()
    upstream = Proc(f"everything-redact-{port}", [NODE, str(EVERYTHING), "streamableHttp"], env={"PORT": str(port)})
    try:
        wait_port(port)
        args = ["--upstream-url", f"http://127.0.0.1:{port}/mcp?key=SECRET-Q", "--upstream-header", "Authorization: Bearer SECRET-H"]
        with proxy_http(args, name="proxy-redact-http") as (base, proc):
            shown = banner(proc)

            async def go():
                async with session("mcp", base) as s:
                    assert text_of(await call_bounded(s, "echo", {"message": "up"}, 10)).endswith("up")
                    upstream.stop()
                    with pytest.raises(MCPError) as e:
                        await call_bounded(s, "echo", {"message": "down"}, 20)
                    return host_error_text(e.value)

            error = anyio.run(go)
            status, body = readyz(base)
            log = proc.log_path.read_text()
            for where, text in [("/readyz", json.dumps(body)), ("banner", shown), ("log", log), ("host error", error)]:
                assert "SECRET-" not in text, f"{where} shows a secret: {text[:2000]}"
            for where, text in [("/readyz", json.dumps(body)), ("host error", error)]:
                assert f"{port}/mcp" not in text, f"{where} shows the upstream URL's path: {text}"
            assert body["upstream"] == f"streamable-http: http://127.0.0.1:{port}", body
    finally:
        upstream.stop()

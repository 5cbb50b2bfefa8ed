"""Issue 3 acceptance: LLM-written pages through each provider's real client against a local
server that speaks its wire format (fake_llm.py), with budgets, retries, dedupe, slots, cache
and fallbacks observed from both ends."""

import contextlib
import json
import sys
import time
import urllib.request
from pathlib import Path

import anyio
import pytest

from conftest import UI_EXT, metric, proxy_http, scrape
from fake_llm import page
from mcpclient import session

KEYS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY", "ollama": "OLLAMA_API_KEY"}
RECORDER = str(Path(__file__).with_name("recording_upstream.py"))




@contextlib.contextmanager
def gen_proxy(fake, provider="openai", config=None, args=None, name="proxy-gen", upstream=None, tmp_path=None, base_url=None, env=None):
    cfg = {"generation": {"timeoutMs": 8000, "maxRetries": 2}}
    for section, values in (config or {}).items():
        cfg.setdefault(section, {}).update(values)
    cfg_path = Path(tmp_path or "/tmp") / f"{name}-{time.time_ns()}.json"
    cfg_path.write_text(json.dumps(cfg))
    env = {KEYS[provider]: "sk-test-secret-key-123", **(env or {})}
    base_args = upstream or ["--demo"]
    url = base_url or fake.base(provider)
    with proxy_http([*base_args, "--provider", provider, "--llm-base-url", url, "--config", str(cfg_path), *(args or [])], name=name, env=env) as (base, proc):
        yield base, proc


def read_ui(base, tool="get_current_weather"):
    async def go():
        async with session("mcp", base) as s:
            res = await s.read_resource(f"ui://{tool}")
            c = res.contents[0]
            return c.text, c.meta["mcp-gen-ui"]

    return anyio.run(go)


def metrics(base) -> str:
    return urllib.request.urlopen(base + "/metrics").read().decode()


@pytest.mark.parametrize("provider", ["anthropic", "openai", "ollama"])
def test_each_provider_writes_the_served_page(fake, provider, tmp_path):
    fake.default = {"html": f"Here you go:\n```html\n{page('PAGE-FROM-' + provider.upper())}\n```"}
    with gen_proxy(fake, provider, name=f"proxy-gen-{provider}", tmp_path=tmp_path) as (base, proc):
        html, meta = read_ui(base)
        assert f"PAGE-FROM-{provider.upper()}" in html
        assert meta["kind"] == "generated" and meta["fallbackReason"] is None
        assert "globalThis.McpGenUiRuntime" in html and '"@modelcontextprotocol/ext-apps"' not in html
        gen = fake.generations()[0]
        prompt = json.dumps(gen["body"])
        assert "get_current_weather" in prompt and "MCP_TOOL_DATA_BEGIN" in prompt
        assert "Output schema" in prompt, "the tool's outputSchema goes into the prompt"
        assert "The tool only reads data" in prompt, "readOnlyHint shapes the prompt"
        headers = {k.lower(): v for k, v in gen["headers"].items()}
        if provider == "anthropic":
            assert headers["x-api-key"] == "sk-test-secret-key-123" and headers["anthropic-version"] == "2023-06-01"
        elif provider == "openai":
            assert headers["authorization"] == "Bearer sk-test-secret-key-123"
        assert headers.get("x-request-id"), "the request id travels to the provider"
        m = metrics(base)
        assert 'mcp_gen_ui_llm_tokens_total{direction="output",model=' in m
        assert "sk-test-secret-key-123" not in proc.log_path.read_text(), "the key never reaches the log"


ERROR_CASES = [
    # (provider, scripted answers, expected generate requests, expected kind, expected reason)
    ("anthropic", [{"status": 429, "type": "rate_limit_error", "headers": {"retry-after": "0"}}], 2, "generated", None),
    ("anthropic", [{"status": 529, "type": "overloaded_error"}], 2, "generated", None),
    ("anthropic", [{"status": 400, "type": "invalid_request_error"}], 1, "template", "INVALID_REQUEST"),
    ("openai", [{"status": 500, "type": "server_error"}, {"status": 503, "type": "server_error"}], 3, "generated", None),
    ("openai", [{"status": 429, "type": "insufficient_quota"}], 1, "template", "INVALID_REQUEST"),
    ("openai", [{"status": 400, "type": "content_filter", "message": "flagged"}], 1, "template", "CONTENT_FILTERED"),
    ("openai", [{"raw": "<html>gateway says hi</html>"}], 2, "generated", None),
    ("ollama", [{"status": 404, "message": "model 'x' not found"}], 1, "template", "INVALID_REQUEST"),
    ("ollama", [{"status": 500, "message": "out of memory"}] * 3, 3, "template", "SERVER_ERROR"),
    ("openai", [{"html": "I'm sorry, but I can't help with that."}, {"html": "still not html"}, {"html": "{}"}], 3, "template", "not_html"),
]


@pytest.mark.parametrize("provider,script,requests,kind,reason", ERROR_CASES)
def test_error_classes_map_and_retry(fake, provider, script, requests, kind, reason, tmp_path):
    fake.script = list(script)
    with gen_proxy(fake, provider, name=f"proxy-err-{provider}", tmp_path=tmp_path) as (base, _):
        html, meta = read_ui(base)
        assert len(fake.generations()) == requests
        assert meta["kind"] == kind, meta
        assert meta["fallbackReason"] == reason, meta
        assert "<form" in html
        if reason:
            assert f'mcp_gen_ui_fallbacks_total{{reason="{reason}"}} 1' in metrics(base)


def test_connection_refused_is_a_network_error(fake, tmp_path):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = s.getsockname()[1]
    s.close()
    cfg = {"generation": {"timeoutMs": 8000, "maxRetries": 1}}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(cfg))
    with proxy_http(["--demo", "--provider", "ollama", "--llm-base-url", f"http://127.0.0.1:{dead}", "--config", str(path)], name="proxy-refused") as (base, _):
        _, meta = read_ui(base)
        assert meta["kind"] == "template" and meta["fallbackReason"] == "NETWORK_ERROR"


def test_a_provider_that_never_answers_is_cut_at_the_first_token_limit(fake, tmp_path):
    """The host's read waits its budget, then gets the provisional page; the generation goes on
    until the provider has had generation.firstTokenMs for each attempt, its connections are
    closed, and the template is kept (reason TIMEOUT) only until the page is tried again."""
    fake.default = {"hang": True}
    budget = 1.5
    cfg = {"generation": {"timeoutMs": int(budget * 1000), "firstTokenMs": 2000, "maxRetries": 1}}
    with gen_proxy(fake, "openai", config=cfg, name="proxy-hang", tmp_path=tmp_path) as (base, proc):
        async def go():
            async with session("mcp", base) as s:
                t0 = time.monotonic()
                res = await s.read_resource("ui://get_forecast")
                return time.monotonic() - t0, res.contents[0]

        elapsed, content = anyio.run(go)
        assert elapsed < budget + 0.1 + 0.15, f"read took {elapsed:.3f}s for a {budget}s budget"  # + client round trip
        ours = content.meta["mcp-gen-ui"]
        assert ours["provisional"] is True and ours["fallbackReason"] is None, ours
        assert "<form" in content.text
        deadline = time.time() + 10
        while len(fake.generations()) < 2 or not all(r["client_closed"] for r in fake.generations()):
            assert time.time() < deadline, "the provider connections were left open"
            time.sleep(0.05)
        time.sleep(0.5)
        html, meta = read_ui(base, "get_forecast")
        assert meta["fallbackReason"] == "TIMEOUT" and not meta.get("provisional"), meta
        assert 25_000 <= meta["expiresAt"] - meta["generatedAt"] <= 31_000, "tried again after 30 s, not on every read"
        assert len(fake.generations()) == 2, "the read after the failure made no new request"
        assert "generation.firstTokenMs" in proc.log_path.read_text()


def test_concurrent_reads_share_one_generation(fake, tmp_path):
    fake.default = {"html": page("SHARED"), "delay": 0.5}
    # 100 reads in flight in one session: above the default limits.maxInFlightPerSession (64).
    with gen_proxy(fake, "anthropic", config={"limits": {"maxInFlightPerSession": 128}}, name="proxy-dedupe", tmp_path=tmp_path) as (base, _):
        async def go():
            async with session("mcp", base) as s:
                results = []

                async def one():
                    r = await s.read_resource("ui://get_forecast")
                    results.append(r.contents[0].text)

                async with anyio.create_task_group() as tg:
                    for _ in range(100):
                        tg.start_soon(one)
                return results

        results = anyio.run(go)
        assert len(results) == 100 and all("SHARED" in r for r in results)
        assert len(fake.generations()) == 1, f"{len(fake.generations())} generation requests for one key"
        m = metrics(base)
        assert "mcp_gen_ui_cache_misses_total 1" in m


def test_twenty_cold_tools_never_exceed_two_slots(fake, tmp_path):
    fake.default = {"html": page("SLOT"), "delay": 0.3}
    log = tmp_path / "up.jsonl"
    upstream = ["--upstream", f"{sys.executable} {RECORDER} {log} --extra-tools 20"]
    with gen_proxy(fake, "openai", upstream=upstream, config={"generation": {"timeoutMs": 15000}}, name="proxy-slots", tmp_path=tmp_path) as (base, _):
        async def go():
            async with session("mcp", base) as s:
                names = [f"extra_{i}" for i in range(20)]
                kinds = []

                async def one(n):
                    r = await s.read_resource(f"ui://{n}")
                    kinds.append(r.contents[0].meta["mcp-gen-ui"]["kind"])

                async with anyio.create_task_group() as tg:
                    for n in names:
                        tg.start_soon(one, n)
                return kinds

        kinds = anyio.run(go)
        assert len(kinds) == 20
        # A read queued for a slot gets the provisional page after a moment (issue 43); the
        # generations go on, two at a time.
        deadline = time.time() + 60
        while len(fake.generations()) < 20 and time.time() < deadline:
            time.sleep(0.2)
        assert fake.max_open <= 2, f"{fake.max_open} LLM requests were open at once"
        assert fake.max_open == 2, "two slots should both be used"
        assert len(fake.generations()) == 20


def test_cache_hits_persistence_and_corrupt_files(fake, tmp_path):
    cache_dir = tmp_path / "cache"
    fake.default = {"html": page("CACHED")}
    with gen_proxy(fake, "openai", args=["--cache-dir", str(cache_dir)], name="proxy-cache-1", tmp_path=tmp_path) as (base, _):
        read_ui(base)
        read_ui(base)
        assert len(fake.generations()) == 1, "the second read is served from cache"
        m = metrics(base)
        assert "mcp_gen_ui_cache_hits_total 1" in m and "mcp_gen_ui_cache_misses_total 1" in m
    files = list(cache_dir.glob("*.json"))
    assert len(files) == 1
    (cache_dir / "garbage.json").write_text("{not json")
    old = json.loads(files[0].read_text())
    old["format"] = 0
    old["key"] = "0" * 64
    (cache_dir / ("0" * 64 + ".json")).write_text(json.dumps(old))
    with gen_proxy(fake, "openai", args=["--cache-dir", str(cache_dir)], name="proxy-cache-2", tmp_path=tmp_path) as (base, proc):
        html, meta = read_ui(base)
        assert "CACHED" in html
        assert len(fake.generations()) == 1, "restored from disk: no new generation"
        log = proc.log_path.read_text()
        assert "corrupt" in log and "older format" in log
    # Another model is another key: a new generation.
    with gen_proxy(fake, "openai", args=["--cache-dir", str(cache_dir), "--model", "other-model"], name="proxy-cache-3", tmp_path=tmp_path) as (base, _):
        read_ui(base)
        assert len(fake.generations()) == 2


def test_changed_prompt_files_make_new_keys(fake, tmp_path):
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    root = Path(__file__).resolve().parents[2] / "prompts"
    for f in ["system.hbs", "generate.hbs", "classify.hbs"]:
        (prompts / f).write_text((root / f).read_text())
    cache_dir = tmp_path / "cache"
    args = ["--cache-dir", str(cache_dir)]
    cfg = {"generation": {"promptsDir": str(prompts)}}
    with gen_proxy(fake, "openai", args=args, config=cfg, name="proxy-prompts-1", tmp_path=tmp_path) as (base, _):
        read_ui(base)
    (prompts / "system.hbs").write_text((root / "system.hbs").read_text() + "\nPrefer compact layouts.\n")
    with gen_proxy(fake, "openai", args=args, config=cfg, name="proxy-prompts-2", tmp_path=tmp_path) as (base, _):
        read_ui(base)
        assert "Prefer compact layouts" in json.dumps(fake.generations()[-1]["body"])
    assert len(fake.generations()) == 2


def test_minimal_tools_get_the_template_without_generating(fake, tmp_path):
    fake.classification = "minimal"
    with gen_proxy(fake, "openai", name="proxy-minimal", tmp_path=tmp_path) as (base, _):
        html, meta = read_ui(base, "set_units")
        assert meta["kind"] == "template" and meta["uiType"] == "minimal" and meta["fallbackReason"] == "minimal"
        assert fake.generations() == []
        m = metrics(base)
        for family in ["mcp_gen_ui_generation_duration_seconds_bucket", "mcp_gen_ui_generations_in_flight 0", "mcp_gen_ui_generations_queued 0", 'mcp_gen_ui_llm_requests_total{model="gpt-4.1",outcome="ok",provider="openai"} 1']:
            assert family in m, family


def test_offline_marks_the_template(tmp_path):
    with proxy_http(["--demo"], name="proxy-offline") as (base, _):
        html, meta = read_ui(base)
        assert meta["kind"] == "template" and meta["fallbackReason"] == "offline"


def test_a_ready_page_is_answered_at_the_edge_with_the_callers_id(fake, tmp_path):
    """The second read of a page is answered from its stored JSON by the HTTP edge: the same
    bytes of result, under whatever id the host used, counted as a hit."""
    import http.client

    fake.script = [{"html": page("EDGE-PAGE")}]
    with gen_proxy(fake, "openai", name="proxy-edge-read", tmp_path=tmp_path) as (base, _):
        port = int(base.rsplit(":", 1)[1])
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

        def rpc(body, sid=None):
            c.request("POST", "/mcp", body=json.dumps(body), headers={**headers, **({"Mcp-Session-Id": sid} if sid else {})})
            r = c.getresponse()
            text = r.read().decode()
            if r.getheader("content-type", "").startswith("text/event-stream"):
                text = [line[5:] for line in text.splitlines() if line.startswith("data:") and line[5:].strip()][-1]
            return r.getheader("mcp-session-id"), json.loads(text)

        sid, _ = rpc({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"extensions": UI_EXT}, "clientInfo": {"name": "t", "version": "1"}}})
        read = {"jsonrpc": "2.0", "method": "resources/read", "params": {"uri": "ui://get_forecast"}}
        _, first = rpc({**read, "id": 1}, sid)
        before = metric(scrape(base), "mcp_gen_ui_cache_hits_total")
        _, second = rpc({**read, "id": "read-2"}, sid)
        _, third = rpc({**read, "id": 3}, sid)
        assert "EDGE-PAGE" in first["result"]["contents"][0]["text"], first
        assert (second["id"], third["id"]) == ("read-2", 3)
        assert second["result"] == first["result"] == third["result"]
        assert metric(scrape(base), "mcp_gen_ui_cache_hits_total") == before + 2
        assert len(fake.generations()) == 1, "one page made"

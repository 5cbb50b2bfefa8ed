"""Issue 23, a team on one endpoint (items 1 to 3): every request has a principal (a static
token's label, a JWT's subject), sessions belong to the principal that opened them, and the LLM
allowance and the share of sessions are the principal's. Two people, raw HTTP and the real
`mcp` SDK, tokens labelled `name:token`, and JWTs minted here against a local JWKS."""

import json
import time

import anyio
import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from conftest import METRICS_TOKEN, UI_EXT, metric, scrape
from test_auth import INIT, JwksServer, initialize, open_sse, public_jwk, request, token_proxy

ALICE = "alice:alice-token-5f2e9c1b7a"
BOB = "bob:bob-token-0d8e4b6a2c"
A, B = ALICE.split(":", 1)[1], BOB.split(":", 1)[1]


def post(base, token, sid, body):
    return request(base + "/mcp", "POST", body, token=token, headers={"Mcp-Session-Id": sid})


def open_session(base, token) -> str:
    code, headers, body = initialize(base, token)
    assert code == 200, body
    sid = headers["Mcp-Session-Id"]
    assert post(base, token, sid, {"jsonrpc": "2.0", "method": "notifications/initialized"})[0] == 202
    return sid


def tools_list(base, token, sid):
    return post(base, token, sid, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})


def test_a_session_belongs_to_whoever_opened_it(tmp_path):
    with token_proxy(tmp_path, ["--auth-token", ALICE, "--auth-token", BOB], name="proxy-teams-owners") as (base, _proc, log):
        sid = open_session(base, A)
        assert tools_list(base, A, sid)[0] == 200
        unknown_code, _, unknown = tools_list(base, B, "0" * 32)
        # Bob holds Alice's session id: everything he does with it is as if it did not exist.
        code, _, body = tools_list(base, B, sid)
        assert code == 404 == unknown_code, (code, body)
        assert json.loads(body)["error"]["message"] == json.loads(unknown)["error"]["message"].replace("0" * 32, sid)
        code, _, _ = request(base + "/mcp", "GET", token=B, headers={"Mcp-Session-Id": sid, "Accept": "text/event-stream"}, timeout=5)
        assert code == 404, "Bob cannot attach to Alice's stream"
        code, _, _ = request(base + "/mcp", "DELETE", token=B, headers={"Mcp-Session-Id": sid})
        assert code == 404, "nor close her session"
        assert tools_list(base, A, sid)[0] == 200, "Alice's session is untouched"

        # Legacy SSE: Bob's POST to Alice's /messages endpoint is refused; hers goes through.
        conn, resp, endpoint = open_sse(base, A)
        try:
            assert endpoint and "sessionId=" in endpoint
            code, _, _ = request(base + endpoint, "POST", INIT, token=B)
            assert code == 404, "Bob cannot post into Alice's /sse session"
            code, _, _ = request(base + endpoint, "POST", INIT, token=A)
            assert code == 202
        finally:
            conn.close()
        assert metric(scrape_with(base, METRICS_TOKEN), "mcp_gen_ui_refusals_total", reason="foreign_session") == 4
        time.sleep(0.3)
        text = log.read_text()
        assert sid not in text, "session ids never reach the logs"
        assert "token alice" in text and "foreign_session" in text


def scrape_with(base, token):
    code, _, body = request(base + "/metrics", token=token)
    assert code == 200
    from prometheus_client.parser import text_string_to_metric_families

    out = {}
    for fam in text_string_to_metric_families(body):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def regenerate(base, token, sid):
    code, _, body = post(base, token, sid, {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                                           "params": {"name": "_ui_regenerate", "arguments": {"toolName": "get_current_weather"}}})
    assert code == 200, body
    if body.startswith("event:") or "\ndata:" in body or body.startswith("data:"):
        body = [line[5:] for line in body.splitlines() if line.startswith("data:") and line[5:].strip()][-1]
    return json.loads(body)["result"]


def ui_session(base, token) -> str:
    body = dict(INIT, params=dict(INIT["params"], capabilities={"extensions": UI_EXT}))
    code, headers, text = request(base + "/mcp", "POST", body, token=token)
    assert code == 200, text
    sid = headers["Mcp-Session-Id"]
    post(base, token, sid, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return sid


def test_the_llm_allowance_and_the_share_of_sessions_are_the_principals(tmp_path):
    # Both admins: with several people only an admin regenerates the page everyone shares
    # (issue 51); an admin's allowance is still their own.
    cfg = {"limits": {"llmCallsPerMinute": 3, "maxSessions": 10, "maxSessionsPerPrincipal": 3},
           "server": {"auth": {"admins": ["alice", "bob"]}}}
    with token_proxy(tmp_path, ["--auth-token", ALICE, "--auth-token", BOB], config=cfg, name="proxy-teams-allowances") as (base, _proc, _log):
        a1, a2 = ui_session(base, A), ui_session(base, A)
        for _ in range(3):
            assert not regenerate(base, A, a1).get("isError"), "within Alice's allowance"
        refused = regenerate(base, A, a2)
        assert refused.get("isError") and "limits.llmCallsPerMinute" in refused["content"][0]["text"], refused
        assert "token alice" in refused["content"][0]["text"], "the refusal names whose allowance it is"
        assert not regenerate(base, B, ui_session(base, B)).get("isError"), "Bob's allowance is his own"

        # Alice has 2 sessions open; a third is allowed, a fourth is not, and Bob is unaffected.
        ui_session(base, A)
        code, headers, body = initialize(base, A)
        assert code == 503 and "limits.maxSessionsPerPrincipal" in body and headers["Retry-After"], body
        assert initialize(base, B)[0] == 200, "Alice cannot take Bob's share"
        # Closing one of hers makes room again.
        assert request(base + "/mcp", "DELETE", token=A, headers={"Mcp-Session-Id": a2})[0] in (200, 204)
        assert initialize(base, A)[0] == 200
        samples = scrape_with(base, METRICS_TOKEN)
        assert metric(samples, "mcp_gen_ui_refusals_total", reason="max_sessions_per_principal") == 1
        assert metric(samples, "mcp_gen_ui_refusals_total", reason="llm_calls_per_minute") == 1


def test_two_jwt_subjects_are_two_principals(tmp_path):
    jwks = JwksServer()
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwks.keys = [public_jwk(key, "k1", "RS256")]
    audience = "http://mcp.test/mcp"

    def token(sub):
        now = int(time.time())
        return jwt.encode({"iss": jwks.url, "aud": audience, "sub": sub, "iat": now, "exp": now + 600}, key, algorithm="RS256",
                          headers={"kid": "k1"})

    try:
        args = ["--oauth-issuer", jwks.url, "--oauth-audience", audience, "--oauth-jwks-url", jwks.url + "/jwks"]
        with token_proxy(tmp_path, args, name="proxy-teams-jwt") as (base, _proc, _log):
            carol, dave = token("carol@example.com"), token("dave@example.com")
            sid = open_session(base, carol)
            assert tools_list(base, token("carol@example.com"), sid)[0] == 200, "another token of the same subject: the same person"
            assert tools_list(base, dave, sid)[0] == 404

            async def sdk():
                # The official SDK with Carol's token: her own sessions work as before.
                async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {carol}"}) as client:
                    async with streamable_http_client(base + "/mcp", http_client=client) as streams:
                        async with ClientSession(streams[0], streams[1]) as s:
                            await s.initialize()
                            return [t.name for t in (await s.list_tools()).tools]

            assert "get_current_weather" in anyio.run(sdk)
    finally:
        jwks.stop()


def test_without_auth_everyone_is_one_principal_and_sessions_still_work(tmp_path):
    with token_proxy(tmp_path, ["--no-auth"], config={"limits": {"maxSessions": 4}}, name="proxy-teams-anonymous") as (base, _proc, _log):
        sids = [open_session(base, None) for _ in range(4)]
        assert all(tools_list(base, None, s)[0] == 200 for s in sids), "no per-principal share without auth"
        assert initialize(base, None)[0] == 503, "only limits.maxSessions applies"
        assert metric(scrape(base), "mcp_gen_ui_refusals_total", reason="max_sessions") == 1


# --- item 5: pages ready before anyone asks ----------------------------------------------------


def warm_state(base) -> dict:
    from replica_peers import readyz

    return readyz(base)


def test_warm_makes_the_selected_pages_with_no_read_within_the_slots(fake, tmp_path):
    import sys

    from fake_llm import page
    from test_generation import RECORDER, gen_proxy

    fake.default = {"html": page("WARM-PAGE"), "delay": 0.3}
    upstream = ["--upstream", f"{sys.executable} {RECORDER} {tmp_path / 'up.jsonl'} --extra-tools 10"]
    cfg = {"generation": {"warm": ["extra_*"], "maxConcurrentGenerations": 2}}
    with gen_proxy(fake, "openai", upstream=upstream, config=cfg, name="proxy-warm", tmp_path=tmp_path) as (base, _):
        assert warm_state(base)["status"] == "ready", "readiness does not wait for warming"
        deadline = time.time() + 60
        while time.time() < deadline and warm_state(base)["warm"] != {"done": 10, "total": 10, "templates": {}}:
            time.sleep(0.2)
        assert warm_state(base)["warm"] == {"done": 10, "total": 10, "templates": {}}
        made = fake.generations()
        assert len(made) == 10, f"{len(made)} generations for 10 tools"
        assert all("extra_" in json.dumps(g["body"]) for g in made), "only the selected tools"
        assert fake.max_open <= 2, f"{fake.max_open} LLM requests at once: more than the slots"
        samples = scrape(base)
        assert metric(samples, "mcp_gen_ui_warm_pages", state="done") == 10

        async def read():
            from mcpclient import session

            async with session("mcp", base) as s:
                r = await s.read_resource("ui://extra_7")
                return r.contents[0].text

        assert "WARM-PAGE" in anyio.run(read)
        assert len(fake.generations()) == 10, "the warm page is served: no generation at the first read"


def test_a_host_read_during_warm_up_goes_before_the_remaining_warm_pages(fake, tmp_path):
    import sys

    from fake_llm import page
    from test_generation import RECORDER, gen_proxy

    fake.default = {"html": page("WARM-PAGE"), "delay": 0.6}
    upstream = ["--upstream", f"{sys.executable} {RECORDER} {tmp_path / 'up.jsonl'} --extra-tools 10"]
    cfg = {"generation": {"warm": "all", "maxConcurrentGenerations": 1}}
    with gen_proxy(fake, "openai", upstream=upstream, config=cfg, name="proxy-warm-first", tmp_path=tmp_path) as (base, _):
        deadline = time.time() + 30
        while warm_state(base)["warm"]["done"] < 1 and time.time() < deadline:
            time.sleep(0.05)
        assert warm_state(base)["warm"]["done"] >= 1, "warming started"

        async def read():
            from mcpclient import session

            async with session("mcp", base) as s:
                r = await s.read_resource("ui://extra_9")
                return r.contents[0].text

        assert "WARM-PAGE" in anyio.run(read)
        state = warm_state(base)["warm"]
        assert state["done"] < state["total"] - 3, f"the host's read waited for the warm-up: {state}"
        # And the warm-up goes on to the end after it.
        deadline = time.time() + 60
        while warm_state(base)["warm"]["done"] < state["total"] and time.time() < deadline:
            time.sleep(0.2)
        assert warm_state(base)["warm"]["done"] == state["total"], warm_state(base)


# --- item 4: refinements that belong to someone ----------------------------------------------

CAROL = "carol:carol-admin-token-8e1f2a"
C = CAROL.split(":", 1)[1]
SCOPED = {"refinements": {"scope": "principal"}, "server": {"auth": {"admins": ["carol"]}}}


async def sdk_session(base, token):
    """An SDK session with a bearer token and the UI extension."""
    import contextlib

    stack = contextlib.AsyncExitStack()
    client = await stack.enter_async_context(httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30))
    streams = await stack.enter_async_context(streamable_http_client(base + "/mcp", http_client=client))
    s = await stack.enter_async_context(ClientSession(streams[0], streams[1], extensions=UI_EXT))
    await s.initialize()
    return s, stack


async def read_page(base, token, tool="get_forecast") -> str:
    s, stack = await sdk_session(base, token)
    async with stack:
        return (await s.read_resource(f"ui://{tool}")).contents[0].text


async def call(base, token, name, args):
    s, stack = await sdk_session(base, token)
    async with stack:
        r = await s.call_tool(name, args)
        assert not r.is_error, r.content[0].text
        return r.structured_content


def prompts(fake) -> list[str]:
    return [json.dumps(g["body"]) for g in fake.generations()]


def test_in_principal_scope_a_refinement_shapes_only_its_authors_page(fake, tmp_path):
    from fake_llm import page
    from test_generation import gen_proxy

    answers = iter(["SHARED-PAGE", "ALICE-PAGE", "CAROL-SHARED-PAGE", "ALICE-AFTER-CAROL"])
    fake.script = [{"html": page(next(answers), "get_forecast")} for _ in range(4)]
    args = ["--auth-token", ALICE, "--auth-token", BOB, "--auth-token", CAROL, "--cache-dir", str(tmp_path / "cache")]
    with gen_proxy(fake, "openai", config=SCOPED, args=args, name="proxy-scope", tmp_path=tmp_path) as (base, _):
        assert "SHARED-PAGE" in anyio.run(read_page, base, A)
        assert "SHARED-PAGE" in anyio.run(read_page, base, B), "pages with no refinement are made once for everyone"
        assert len(fake.generations()) == 1

        done = anyio.run(call, base, A, "_ui_refine", {"toolName": "get_forecast", "feedback": "make the heading say ALICE-WISH"})
        assert done["scope"] == "yours"
        assert "ALICE-WISH" in prompts(fake)[-1], "Alice's refinement reaches the LLM prompt of her page"
        assert "ALICE-PAGE" in anyio.run(read_page, base, A)
        assert "SHARED-PAGE" in anyio.run(read_page, base, B), "and not Bob's page"
        assert len(fake.generations()) == 2

        mine = anyio.run(call, base, A, "_ui_inspect", {"toolName": "get_forecast"})
        assert [(r["feedback"], r["scope"]) for r in mine["refinements"]] == [("make the heading say ALICE-WISH", "yours")]
        assert anyio.run(call, base, B, "_ui_inspect", {"toolName": "get_forecast"})["refinements"] == [], "Bob sees what applies to him"

        # Carol is an admin: her refinement is everyone's.
        assert anyio.run(call, base, C, "_ui_refine", {"toolName": "get_forecast", "feedback": "add a CAROL-NOTE"})["scope"] == "shared"
        assert "CAROL-NOTE" in prompts(fake)[-1] and "ALICE-WISH" not in prompts(fake)[-1]
        assert "CAROL-SHARED-PAGE" in anyio.run(read_page, base, B), "an admin's refinement reaches Bob"
        assert "ALICE-AFTER-CAROL" in anyio.run(read_page, base, A), "and Alice, with hers on top"
        last = prompts(fake)[-1]
        assert "CAROL-NOTE" in last and "ALICE-WISH" in last
        made = len(fake.generations())

    # After a restart each one's page comes from the cache folder, no LLM call.
    with gen_proxy(fake, "openai", config=SCOPED, args=args, name="proxy-scope-again", tmp_path=tmp_path) as (base, _):
        assert "ALICE-AFTER-CAROL" in anyio.run(read_page, base, A)
        assert "CAROL-SHARED-PAGE" in anyio.run(read_page, base, B)
        assert len(fake.generations()) == made, "served from disk, the scopes kept"


def test_principal_scope_across_replicas_sharing_redis(fake, tmp_path):
    from fake_llm import page
    from replica_peers import Redis, replicas

    fake.script = [{"html": page("SHARED-PAGE", "get_forecast")}, {"html": page("ALICE-PAGE", "get_forecast")}]
    redis = Redis()
    try:
        with replicas(fake, redis, 2, tmp_path, name="rep-scope", config=SCOPED, args=["--auth-token", ALICE, "--auth-token", BOB]) as reps:
            (one, _), (two, _) = reps
            assert "SHARED-PAGE" in anyio.run(read_page, one, B)
            anyio.run(call, one, A, "_ui_refine", {"toolName": "get_forecast", "feedback": "make it ALICE-WISH"})
            assert "ALICE-PAGE" in anyio.run(read_page, two, A), "Alice's page on the other replica"
            assert "SHARED-PAGE" in anyio.run(read_page, two, B), "Bob's stays the shared one there too"
            assert len(fake.generations()) == 2
    finally:
        redis.stop()


def test_principal_scope_without_auth_is_refused_naming_the_field(tmp_path):
    import subprocess

    from conftest import BIN

    cfg = tmp_path / "scope.json"
    cfg.write_text(json.dumps({"refinements": {"scope": "principal"}}))
    out = subprocess.run([str(BIN), "--demo", "--config", str(cfg)], capture_output=True, text=True, timeout=20)
    assert out.returncode == 2 and "refinements.scope" in out.stderr, out.stderr

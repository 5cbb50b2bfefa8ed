"""Issue 42, each person's servers and what follows them, end to end: a person the rules deny a
whole perPrincipal server gets no process for it; a call to a per-person server's tool before
any list (a fresh session, a 2026 stateless request) starts the caller's own process and is
answered with their secret, and a person's first tools/list waits for their process so it is
whole; token exchange follows the person's current access token after the first one expired;
a refinement made while Redis is down is written back once it answers; the HTTP edge's fast
path for ready pages serves only pages of the session's profile. Every test shows what works
before what is refused, and every wait is bounded."""

import base64
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

import exchange_peers
from conftest import METRICS_TOKEN, metric, wait_for
from exchange_peers import CLIENT_ID, CLIENT_SECRET, AuthServer, RemoteServer
from fake_llm import page
from replica_peers import Redis, replicas, wait_redis_status
from test_auth import JwksServer, public_jwk, request, token_proxy
from test_policy import ALICE, IDS, init_ui
from test_policy import rpc as rpc_ui
from test_principals import AUDIENCE, PEOPLE, SECRET, proxy, rpc, secret_server, session, whoami
from test_profiles import rpc as rpc_open
from test_profiles import session as open_session
from test_protocol_2026 import post as post_2026
from test_rules_everywhere import ONE, open_profile, ready_reads
from test_teams import scrape_with


def server_state(base: str, name: str) -> dict:
    """The server's entry in /readyz (perPrincipal: how many connections run, tools known)."""
    code, _, text = request(base + "/readyz")
    assert code == 200, (code, text)
    return next(s for s in json.loads(text)["servers"] if s["name"] == name)


def running(base: str, name: str) -> int:
    return server_state(base, name)["perPrincipal"]["running"]


def secret_children(parent_pid: int) -> list[int]:
    """The proxy's child processes running secret_upstream.py (one per person's connection)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmdline = (d / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        if ppid == parent_pid and str(SECRET) in cmdline:
            out.append(int(d.name))
    return out


def tool_names(answer: dict) -> set:
    return {t["name"] for t in answer["result"]["tools"]}


# --- 1. a person denied a whole per-person server gets no process for it -----------------------

NO_SECRET_FOR_BOB = {"default": "allow", "rules": [
    {"name": "no secret server for bob", "servers": ["secret"], "effect": "deny", "when": "principal.name == 'bob'"}]}


def test_a_person_denied_a_whole_per_person_server_gets_no_process_for_it(tmp_path):
    """Guards Policy::denies_whole_server (actors/src/policy/rules.rs) as asked by
    HostSession::learn_per_principal_servers (actors/src/session/lists.rs): bob, whom a
    server-wide rule denies `secret`, lists first (nobody's process runs, its tools are not
    known: before the fix his list started his process to learn them) and calls its tool: no
    process, no slot, no start for `secret`, while `other` (not denied) starts his. Alice's
    list then starts hers and shows its tools."""
    servers = {"secret": secret_server(), "other": secret_server()}
    with proxy(tmp_path, "proxy-people-denied", servers, config={"policy": NO_SECRET_FOR_BOB}) as (base, proc, _log):
        a, b = session(base, PEOPLE["alice"]), session(base, PEOPLE["bob"])
        assert server_state(base, "secret")["state"] == "on demand"

        listed = tool_names(rpc(base, PEOPLE["bob"], b, "tools/list"))
        assert "other__whoami" in listed, f"bob's first list has his own server's tools: {listed}"
        assert not any(n.startswith("secret__") for n in listed), listed
        bobs_other = whoami(base, PEOPLE["bob"], b, "other__whoami")["result"]["structuredContent"]
        assert bobs_other["secret"] == "ghp-bob-0002", bobs_other
        refused = whoami(base, PEOPLE["bob"], b)
        assert "error" in refused and "ghp-bob" not in json.dumps(refused), refused
        assert running(base, "secret") == 0, server_state(base, "secret")
        assert running(base, "other") == 1, server_state(base, "other")
        assert secret_children(proc.p.pid) == [bobs_other["pid"]], "bob's process for `other`, none for `secret`"
        samples = scrape_with(base, METRICS_TOKEN)
        assert metric(samples, "mcp_gen_ui_principal_connections", server="other", principal="bob", source="token") == 1
        assert metric(samples, "mcp_gen_ui_principal_connections", server="secret", principal="bob", source="token") == 0
        assert metric(samples, "mcp_gen_ui_principal_starts_total", server="secret", outcome="started") == 0

        # Alice's first list starts her processes and waits for them: it has `secret`'s tool.
        assert {"secret__whoami", "other__whoami"} <= tool_names(rpc(base, PEOPLE["alice"], a, "tools/list"))
        mine = whoami(base, PEOPLE["alice"], a)["result"]["structuredContent"]
        assert mine["secret"] == "ghp-alice-0001", mine
        assert running(base, "secret") == 1

        # Bob asking again, now that the tools are known: still nothing of it, still no process.
        assert not any(n.startswith("secret__") for n in tool_names(rpc(base, PEOPLE["bob"], b, "tools/list")))
        again = whoami(base, PEOPLE["bob"], b)
        assert "error" in again and "ghp-" not in json.dumps(again), again
        samples = scrape_with(base, METRICS_TOKEN)
        assert metric(samples, "mcp_gen_ui_principal_connections", server="secret", principal="alice", source="token") == 1
        assert metric(samples, "mcp_gen_ui_principal_connections", server="secret", principal="bob", source="token") == 0
        assert metric(samples, "mcp_gen_ui_principal_starts_total", server="secret", outcome="started") == 1
        assert running(base, "secret") == 1
        # Two processes in all: bob's for `other`, alice's for `secret` (hers for `other` starts
        # with her first call of it: its tools were known by then).
        assert set(secret_children(proc.p.pid)) == {mine["pid"], bobs_other["pid"]}, secret_children(proc.p.pid)


# --- 2. a call before any list, and a first list that is whole ---------------------------------


def test_a_call_before_any_list_starts_the_callers_process_and_a_first_list_is_whole(tmp_path):
    """Guards HostSession::plan_then_carry_out (actors/src/session/dispatch.rs: a call to a
    tool nobody knows yet starts the caller's connection and is planned again) and
    HostSession::after_learning (actors/src/session/lists.rs: a first tools/list waits for the
    person's own servers). Three per-person servers whose tools nobody knows yet:
    - alice's first request ever is a 2026 stateless call of secret__whoami: answered with her
      secret (before: "no server ... has a tool named"); only `secret` was started for it;
    - bob's fresh session calls other__whoami before any list: his secret, his process;
    - dan's first tools/list includes third__whoami (before: a list without it)."""
    servers = {"secret": secret_server(), "other": secret_server(), "third": secret_server()}
    with proxy(tmp_path, "proxy-people-first", servers) as (base, proc, _log):
        assert all(server_state(base, s)["tools"] == 0 for s in servers), "no tool of any of them is known yet"

        status, _, answer = post_2026(base, "tools/call", {"name": "secret__whoami", "arguments": {}},
                                      headers={"Authorization": f"Bearer {PEOPLE['alice']}"})
        assert status == 200 and "result" in answer, (status, answer)
        alices = answer["result"]["structuredContent"]
        assert alices["secret"] == "ghp-alice-0001", alices
        assert running(base, "secret") == 1 and server_state(base, "secret")["tools"] == 1
        assert running(base, "other") == 0 and running(base, "third") == 0, "only the server that could own the tool is started"

        b = session(base, PEOPLE["bob"])
        bobs = whoami(base, PEOPLE["bob"], b, "other__whoami")
        assert "result" in bobs, bobs
        assert bobs["result"]["structuredContent"]["secret"] == "ghp-bob-0002", bobs
        assert bobs["result"]["structuredContent"]["pid"] != alices["pid"]
        assert running(base, "other") == 1 and running(base, "third") == 0

        d = session(base, PEOPLE["dan"])
        t0 = time.monotonic()
        names = tool_names(rpc(base, PEOPLE["dan"], d, "tools/list"))
        waited = time.monotonic() - t0
        assert {"secret__whoami", "other__whoami", "third__whoami"} <= names, names
        assert waited < 12, f"the first list waits at most 10 s for the person's servers ({waited:.1f} s)"
        dans = whoami(base, PEOPLE["dan"], d, "third__whoami")["result"]["structuredContent"]
        assert dans["secret"] == "ghp-dan-0004", dans
        assert running(base, "third") == 1
        pids = {alices["pid"], bobs["result"]["structuredContent"]["pid"], dans["pid"]}
        assert len(pids) == 3 and set(secret_children(proc.p.pid)) >= pids, (pids, secret_children(proc.p.pid))


# --- 3. token exchange follows the person's current access token -------------------------------


class RecordingJwt:
    """Stands in for the `jwt` module inside exchange_peers: the same functions, and it notes
    which subject token each token minted by the authorization server was exchanged from."""

    PyJWTError = jwt.PyJWTError

    def __init__(self, users_key):
        self.users_key = users_key
        self.minted_from: dict[str, str] = {}
        self.local = threading.local()

    def decode(self, token, key, **kwargs):
        claims = jwt.decode(token, key, **kwargs)
        if key is self.users_key:
            self.local.subject = token
        return claims

    def encode(self, payload, key, **kwargs):
        token = jwt.encode(payload, key, **kwargs)
        self.minted_from[token] = getattr(self.local, "subject", None)
        return token

    def subjects_seen(self, bearers: list[str]) -> list:
        """For each Authorization the remote server got, the user token it was exchanged from."""
        return [self.minted_from.get(b.removeprefix("Bearer ")) for b in bearers]


class Exchange:
    """A users' JWKS, the fake authorization server (its tokens live 20 s: less than the 30 s
    before expiry at which the proxy exchanges again, so every request exchanges and a stale
    subject token shows at once) and the remote server, recording what was exchanged."""

    def __init__(self, monkeypatch):
        self.users = JwksServer()
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.users.keys = [public_jwk(self.key, "k1", "RS256")]
        self.auth = AuthServer(self.key.public_key(), lifetime=20)
        self.remote = RemoteServer(self.auth, audience="https://remote.test")
        self.jwt = RecordingJwt(self.auth.users_key)
        monkeypatch.setattr(exchange_peers, "jwt", self.jwt)
        monkeypatch.setenv("EXCHANGE_SECRET", CLIENT_SECRET)
        self.servers = {"remote": {"type": "http", "url": self.remote.url, "perPrincipal": True, "tokenExchange": {
            "tokenEndpoint": self.auth.url + "/token", "clientId": CLIENT_ID, "clientSecret": "${env:EXCHANGE_SECRET}",
            "audience": "https://remote.test", "scopes": ["tools:call"]}}}
        self.args = ["--oauth-issuer", self.users.url, "--oauth-audience", AUDIENCE, "--oauth-jwks-url", self.users.url + "/jwks"]

    def sign_in(self, sub: str, life: int) -> tuple[str, int]:
        now = int(time.time())
        claims = {"iss": self.users.url, "aud": AUDIENCE, "sub": sub, "iat": now, "exp": now + life, "jti": f"{sub}-{time.time_ns()}"}
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": "k1"}), now + life

    def refused_by_auth_server(self, subject_token: str) -> str:
        """The authorization server asked directly to exchange `subject_token`: its error code."""
        form = urllib.parse.urlencode({"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "subject_token": subject_token,
                                       "audience": "https://remote.test"}).encode()
        basic = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        req = urllib.request.Request(self.auth.url + "/token", form, {"Authorization": f"Basic {basic}",
                                                                     "Content-Type": "application/x-www-form-urlencoded"})
        try:
            with urllib.request.urlopen(req, timeout=5):
                return ""
        except urllib.error.HTTPError as e:
            return json.loads(e.read()).get("error", "")

    def stop(self):
        self.users.stop()
        self.auth.stop()
        self.remote.stop()


def first_call_then_expire(x: Exchange, base: str) -> tuple[str, str, str]:
    """Erin signs in with a JWT that expires in 5 s and calls the remote server (its token is
    exchanged from that JWT); then the JWT expires: the authorization server refuses it (the
    proxy still takes it for its 60 s leeway). Answers (JWT #1, its session, a fresh JWT #2)."""
    first, exp = x.sign_in("erin@example.com", 5)
    s1 = session(base, first)
    seen = len(x.remote.seen)
    who = whoami(base, first, s1, "remote__whoami")
    assert who.get("result", {}).get("structuredContent") == {"sub": "erin@example.com", "aud": "https://remote.test", "act": CLIENT_ID}, who
    assert x.jwt.subjects_seen(x.remote.seen[seen:]) and set(x.jwt.subjects_seen(x.remote.seen[seen:])) == {first}, "exchanged from JWT #1"
    wait_for(lambda: time.time() > exp + 1, 15, "JWT #1 expired")
    assert x.refused_by_auth_server(first) == "invalid_grant", "the authorization server no longer exchanges JWT #1"
    second, _ = x.sign_in("erin@example.com", 600)
    assert second != first
    return first, s1, second


def test_token_exchange_follows_a_fresh_token_in_a_new_session(tmp_path, monkeypatch):
    """Guards Exchanged::present (actors/src/upstream/token_exchange.rs) as called by
    PrincipalPool::router_for (actors/src/servers/principals.rs) with the Exchanged that
    Starter::spec_for (src/principals.rs) hands back: erin's connection was started with JWT #1;
    after it expired she comes back with JWT #2 (a new session): the call is answered and the
    remote server got only tokens exchanged from JWT #2 (before: JWT #1 again, invalid_grant)."""
    x = Exchange(monkeypatch)
    try:
        with proxy(tmp_path, "proxy-people-exchange-new", x.servers, args=x.args) as (base, _proc, _log):
            _first, _s1, second = first_call_then_expire(x, base)
            s2 = session(base, second)
            seen, grants = len(x.remote.seen), len(x.auth.requests)
            who = whoami(base, second, s2, "remote__whoami")
            assert "error" not in who, f"a call with the fresh token fails: {who}"
            assert who["result"]["structuredContent"] == {"sub": "erin@example.com", "aud": "https://remote.test", "act": CLIENT_ID}, who
            assert len(x.auth.requests) > grants, "a new exchange for the new token"
            subjects = x.jwt.subjects_seen(x.remote.seen[seen:])
            assert subjects and set(subjects) == {second}, "the remote server got tokens exchanged from JWT #2 only"
            samples = scrape_with(base, METRICS_TOKEN)
            assert metric(samples, "mcp_gen_ui_token_exchanges_total", server="remote", outcome="ok") >= 2
            # Her connection was kept and told the new token, not replaced by a new one.
            assert metric(samples, "mcp_gen_ui_principal_starts_total", server="remote", outcome="started") == 1
    finally:
        x.stop()


# --- 4. a refinement made while Redis was down is written back ---------------------------------

HISTORY_KEY = "mcp-gen-ui:refinements:get_forecast"  # the default redisKeyPrefix; store/redis/history.rs


def feedback_of(base: str, sid: str) -> list:
    answer = rpc_open(base, "/mcp", sid, "tools/call", {"name": "_ui_inspect", "arguments": {"toolName": "get_forecast"}})
    assert "result" in answer and not answer["result"].get("isError"), answer
    return [r["feedback"] for r in answer["result"]["structuredContent"]["refinements"]]


def test_a_refinement_made_while_redis_is_down_is_written_back(fake, tmp_path):
    """Guards Refinements::write_back and the Append/History handlers' `unsynced`
    (actors/src/store/refinements.rs): a refinement accepted by replica A while Redis is gone
    reaches Redis's history (LRANGE) once Redis is back on the same port, and then replica B's
    _ui_inspect shows it and A's still does (before: Redis's empty history won and it was lost)."""
    fake.default = {"html": page("WRITTEN-BACK", tool="get_forecast")}
    redis = Redis()
    try:
        with replicas(fake, redis, 2, tmp_path, name="rep-writeback") as reps:
            (a_base, _), (b_base, _) = reps
            a, b = open_session(a_base), open_session(b_base)
            first = rpc_open(a_base, "/mcp", a, "resources/read", {"uri": "ui://get_forecast"})
            assert "WRITTEN-BACK" in first["result"]["contents"][0]["text"], first
            # Nothing refined yet, on either replica.
            assert feedback_of(a_base, a) == [] and feedback_of(b_base, b) == []

            redis.kill()
            feedback = "show the days as a table, written while Redis was away"
            refined = rpc_open(a_base, "/mcp", a, "tools/call", {"name": "_ui_refine", "arguments": {"toolName": "get_forecast", "feedback": feedback}})
            assert "result" in refined and not refined["result"].get("isError"), refined
            assert refined["result"]["structuredContent"]["refinements"] == 1, refined
            assert feedback_of(a_base, a) == [feedback], "kept on A while Redis is away"

            redis.start()
            for base in (a_base, b_base):
                wait_redis_status(base, "ok", timeout=20)

            def in_redis():
                return [json.loads(x).get("feedback") for x in redis.cmd("LRANGE", HISTORY_KEY, 0, -1) or []]

            wait_for(lambda: in_redis() == [feedback], 20,
                     f"the refinement written back to Redis's {HISTORY_KEY} (keys now: {redis.cmd('KEYS', '*')})")
            wait_for(lambda: feedback_of(b_base, b) == [feedback], 10, "replica B's _ui_inspect showing A's refinement")
            assert feedback_of(a_base, a) == [feedback], "A still shows it"
            assert in_redis() == [feedback], "written once, not twice"
    finally:
        redis.stop()


# --- 5. the edge's fast path for ready pages respects the session's profile --------------------


def test_the_edges_fast_path_serves_no_ready_page_outside_the_sessions_profile(tmp_path):
    """Guards ui_reads::ready_page's profile check (actors/src/session/ui_reads.rs, fed the
    session's profile by streamable.rs's ready_read): the forecast's page, made ready through
    /mcp and served by the edge from there, is refused to a session on /mcp/now, whose profile
    has only get_current_weather; that session still gets its own tool's page."""
    config = {"profiles": {"now": {"tools": ["get_current_weather"]}}}
    with token_proxy(tmp_path, ONE, config=config, name="proxy-people-profile-ready") as (base, _proc, log):
        full = init_ui(base, ALICE)
        first = rpc_ui(base, ALICE, full, "resources/read", {"uri": "ui://get_forecast"})["result"]["contents"][0]
        assert first["text"].startswith("<!doctype html>") and not first["_meta"]["mcp-gen-ui"].get("provisional"), first["_meta"]

        def served_by_edge():
            again = rpc_ui(base, ALICE, full, "resources/read", {"uri": "ui://get_forecast"})["result"]["contents"][0]
            assert again["text"] == first["text"], again
            return ready_reads(log, "ui://get_forecast")

        wait_for(served_by_edge, 15, "a read of ui://get_forecast answered by the edge from the ready page", every=0.2)

        path = "/mcp/now"
        p = open_profile(base, ALICE, path)

        def on_profile(method, params):
            code, _, text = request(base + path, "POST", {"jsonrpc": "2.0", "id": next(IDS), "method": method, "params": params},
                                    token=ALICE, headers={"Mcp-Session-Id": p})
            assert code == 200, (code, text)
            return json.loads(text), text

        listed, _ = on_profile("tools/list", {})
        names = tool_names(listed)
        assert "get_current_weather" in names and "get_forecast" not in names, names
        own, _ = on_profile("resources/read", {"uri": "ui://get_current_weather"})
        assert own["result"]["contents"][0]["text"].startswith("<!doctype html>"), own

        edge_reads = len(ready_reads(log, "ui://get_forecast"))
        for _ in range(3):
            answer, text = on_profile("resources/read", {"uri": "ui://get_forecast"})
            assert "error" in answer and "result" not in answer, f"the profile's session was given a page outside it: {text[:300]}"
            assert "<html" not in text.lower() and first["text"][:200] not in text, "no page HTML gets through"
        # The page was ready all along: the full endpoint's session is served it by the edge, one
        # read more than before the refusals (none of which the edge served).
        back = rpc_ui(base, ALICE, full, "resources/read", {"uri": "ui://get_forecast"})["result"]["contents"][0]
        assert back["text"] == first["text"]
        wait_for(lambda: len(ready_reads(log, "ui://get_forecast")) == edge_reads + 1, 10, "the edge serving the ready page to /mcp again")


# --- 3, continued: a host that keeps its session and refreshes its token -----------------------


def test_token_exchange_follows_a_fresh_token_in_the_same_session(tmp_path, monkeypatch):
    """The same as above, but erin's host keeps its session and sends JWT #2 on it (as a host
    that refreshes its access token does): each call tells the connection "the token it came
    with" (commit 04de474), so the remote server must get a token exchanged from JWT #2. Guards
    Exchanged::present (actors/src/upstream/token_exchange.rs) fed from the session's Who
    (HostSession.who, actors/src/session/mod.rs, used by forward.rs's router_for)."""
    x = Exchange(monkeypatch)
    try:
        with proxy(tmp_path, "proxy-people-exchange-same", x.servers, args=x.args) as (base, _proc, _log):
            _first, s1, second = first_call_then_expire(x, base)
            seen = len(x.remote.seen)
            who = whoami(base, second, s1, "remote__whoami")
            assert "error" not in who, f"a call with the fresh token on the session opened with the expired one fails: {who}"
            assert who["result"]["structuredContent"]["sub"] == "erin@example.com", who
            subjects = x.jwt.subjects_seen(x.remote.seen[seen:])
            assert subjects and set(subjects) == {second}, "the remote server got tokens exchanged from JWT #2 only"
    finally:
        x.stop()

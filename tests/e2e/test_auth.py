"""Issue 10, authentication: static bearer tokens (flags, environment, config file, a tokens file
re-read on SIGHUP), the token generated for a non-loopback listener, /metrics behind the tokens
or on a separate address, and the service as an OAuth 2.1 resource server against a local JWKS
server with keys made here. Clients are real: the Python `mcp` SDK with a bearer header, and raw
HTTP. No token ever reaches a log."""

import contextlib
import http.client
import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import anyio
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from conftest import BIN, METRICS_TOKEN, Proc, free_port, proxy_http, wait_http

TOKEN = "flag-token-3c1d7e0a9b2f"
OTHER = "flag-token-second-55aa01"
WRONG = "wrong-token-8e8e8e8e8e8e"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "clientInfo": {"name": "auth-test", "version": "1"}, "capabilities": {}}}


# --- raw HTTP --------------------------------------------------------------------------------


def request(url, method="GET", body=None, token=None, headers=None, timeout=20):
    """(status, headers, body text) without raising on 4xx/5xx."""
    h = dict(headers or {})
    if token is not None:
        h["Authorization"] = f"Bearer {token}"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        h.setdefault("Content-Type", "application/json")
        h.setdefault("Accept", "application/json, text/event-stream")
    req = urllib.request.Request(url, data=data, headers=h, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


def initialize(base, token=None, headers=None):
    return request(base + "/mcp", "POST", INIT, token=token, headers=headers)


def assert_refused(res, status=401, says=("Authorization: Bearer",), error=None):
    code, headers, body = res
    assert code == status, (code, body)
    challenge = headers.get("WWW-Authenticate", "")
    assert challenge.startswith("Bearer "), challenge
    if error:
        assert f'error="{error}"' in challenge, challenge
    else:
        assert "error=" not in challenge, challenge
    msg = json.loads(body)
    assert msg["jsonrpc"] == "2.0" and msg["id"] is None and msg["error"]["code"] == -32003, msg
    for s in says:
        assert s in msg["error"]["message"], msg["error"]["message"]
    return challenge, msg["error"]["message"]


def open_sse(base, token=None):
    """GET /sse; returns (connection, response, endpoint path) or (None, response, None) when refused."""
    port = int(base.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    h = {"Accept": "text/event-stream"}
    if token:
        h["Authorization"] = f"Bearer {token}"
    conn.request("GET", "/sse", headers=h)
    resp = conn.getresponse()
    if resp.status != 200:
        resp.read()
        conn.close()
        return None, resp, None
    endpoint = None
    while endpoint is None:
        line = resp.fp.readline().decode()
        if line.startswith("data:"):
            endpoint = line[5:].strip()
    return conn, resp, endpoint


def log_of(proc) -> str:
    proc.log.flush()
    return proc.log_path.read_text()


def wait_for(pred, timeout=10.0, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


# --- the Python MCP SDK with a bearer header ---------------------------------------------------


def leaves(e):
    """The exceptions inside (nested) exception groups."""
    if isinstance(e, BaseExceptionGroup):
        return [x for sub in e.exceptions for x in leaves(sub)]
    return [e]


def sdk_refused(base, transport, token):
    """The SDK fails at once on a refused token: over /mcp with our JSON-RPC error (code and
    message), over /sse with the HTTP 401 of the stream."""
    start = time.time()
    with pytest.raises(BaseException) as info:
        sdk(base, transport, token)
    assert time.time() - start < 5, "no hanging on a refusal"
    errs = leaves(info.value)
    if transport == "mcp":
        codes = [getattr(getattr(e, "error", None), "code", None) for e in errs]
        assert -32003 in codes, errs
        assert any("Authorization: Bearer" in str(e) for e in errs), errs
    else:
        assert any(getattr(getattr(e, "response", None), "status_code", None) == 401 for e in errs), errs


async def sdk_call(base, transport, token):
    """Initialize, list tools and call one over /mcp or /sse with the SDK; returns the tool names."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if transport == "mcp":
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as client:
            async with streamable_http_client(base + "/mcp", http_client=client) as streams:
                async with ClientSession(streams[0], streams[1]) as s:
                    await s.initialize()
                    tools = await s.list_tools()
                    r = await s.call_tool("get_current_weather", {"city": "Oslo"})
                    assert not r.is_error and "Oslo" in json.dumps(r.model_dump(mode="json")), r
                    return [t.name for t in tools.tools]
    async with sse_client(base + "/sse", headers=headers) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            tools = await s.list_tools()
            res = await s.call_tool("get_current_weather", {"city": "Lima"})
            assert not res.is_error
            return [t.name for t in tools.tools]


def sdk(base, transport, token):
    async def go():
        with anyio.fail_after(30):
            return await sdk_call(base, transport, token)

    return anyio.run(go)


# --- static tokens -----------------------------------------------------------------------------


@contextlib.contextmanager
def token_proxy(tmp_path, args=(), config=None, env=None, name="proxy-auth"):
    # Short keep-alives: closed SSE clients are noticed at once, so stopping takes no drain time.
    cfg = {"logging": {"file": str(tmp_path / "service.log")}, "server": {"sseKeepaliveSecs": 1}}
    for section, values in (config or {}).items():
        cfg.setdefault(section, {}).update(values)
    path = tmp_path / "auth.json"
    path.write_text(json.dumps(cfg))
    with proxy_http(["--demo", "--log-level", "debug", "--log-format", "json", "--config", str(path), *args], name=name, env=env) as (base, proc):
        yield base, proc, tmp_path / "service.log"


def test_no_token_wrong_token_right_token_over_mcp_sse_and_messages(tmp_path):
    with token_proxy(tmp_path, ["--auth-token", TOKEN, "--auth-token", OTHER]) as (base, proc, log):
        # /mcp
        assert_refused(initialize(base), says=("needs a bearer token", "Authorization: Bearer <token>", "--auth-token"))
        challenge, _ = assert_refused(initialize(base, WRONG), error="invalid_token", says=("refused", "not one of the service's tokens"))
        assert "resource_metadata" not in challenge, "no OAuth, no metadata"
        assert_refused(initialize(base, headers={"Authorization": "Basic dXNlcjpwYXNz"}))
        assert_refused(initialize(base, headers={"Authorization": "Bearer"}), error="invalid_request")
        assert_refused(initialize(base, TOKEN[:-1]), error="invalid_token")
        code, headers, body = initialize(base, TOKEN)
        assert code == 200 and json.loads(body)["result"]["serverInfo"], body
        sid = headers["Mcp-Session-Id"]
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        # A session id is not a credential: every request needs the token.
        assert_refused(request(base + "/mcp", "POST", ping, headers={"Mcp-Session-Id": sid}))
        # Another token is another principal (named by its index): the session is not theirs.
        assert request(base + "/mcp", "POST", ping, token=OTHER, headers={"Mcp-Session-Id": sid})[0] == 404
        assert request(base + "/mcp", "POST", ping, token=TOKEN, headers={"Mcp-Session-Id": sid})[0] == 200
        assert request(base + "/mcp", "POST", ping, headers={"Mcp-Session-Id": sid, "Authorization": f"bearer {TOKEN}"})[0] == 200, "the scheme is case-insensitive"
        assert_refused(request(base + "/mcp", "GET", headers={"Accept": "text/event-stream", "Mcp-Session-Id": sid}))
        assert_refused(request(base + "/mcp", "DELETE", headers={"Mcp-Session-Id": sid}))
        assert request(base + "/mcp", "DELETE", token=TOKEN, headers={"Mcp-Session-Id": sid})[0] == 200

        # /sse and /messages
        _, refused, _ = open_sse(base)
        assert refused.status == 401 and refused.getheader("WWW-Authenticate").startswith("Bearer ")
        _, refused, _ = open_sse(base, WRONG)
        assert refused.status == 401
        conn, resp, endpoint = open_sse(base, TOKEN)
        try:
            assert endpoint.startswith("/messages?sessionId="), endpoint
            assert_refused(request(base + endpoint, "POST", INIT))
            assert_refused(request(base + endpoint, "POST", INIT, token=WRONG), error="invalid_token")
            assert request(base + endpoint, "POST", INIT, token=TOKEN)[0] == 202
        finally:
            conn.close()

        # Open endpoints.
        for path in ["/healthz", "/readyz", "/preview", "/preview/sandbox"]:
            assert request(base + path)[0] == 200, path
        assert request(base + "/.well-known/oauth-protected-resource")[0] == 404, "not an OAuth resource server"
        # /metrics: with two people it is for admins and the scrape's token
        # (test_names_and_metrics.py), which a token for hosts is not.
        assert_refused(request(base + "/metrics"))
        assert request(base + "/metrics", token=TOKEN)[0] == 403
        code, _, text = request(base + "/metrics", token=METRICS_TOKEN)
        assert code == 200 and "mcp_gen_ui_requests_total" in text

    text = log.read_text()
    for secret in (TOKEN, OTHER, WRONG, TOKEN[:-1]):
        assert secret not in text, f"a token reached the log: {secret}"
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    ok = [entry for entry in lines if entry.get("event") == "authenticated"]
    assert {"token --auth-token[0]", "token --auth-token[1]"} <= {entry.get("principal") for entry in ok}, ok[:3]
    refused = [entry for entry in lines if entry.get("event") == "refused"]
    assert {"missing", "invalid", "malformed"} <= {entry.get("reason") for entry in refused}


def test_the_mcp_sdk_with_a_bearer_header(tmp_path):
    with token_proxy(tmp_path, ["--auth-token", TOKEN]) as (base, _, log):
        assert "get_current_weather" in sdk(base, "mcp", TOKEN)
        assert "get_current_weather" in sdk(base, "sse", TOKEN)
        for transport in ("mcp", "sse"):
            sdk_refused(base, transport, WRONG)
            sdk_refused(base, transport, None)
    assert TOKEN not in log.read_text() and WRONG not in log.read_text()


def test_tokens_from_the_environment_and_the_config_file(tmp_path):
    env_token, cfg_token = "env-token-77d0c3b1e2aa", "config-token-19fe44c0a7"
    with token_proxy(tmp_path, config={"server": {"auth": {"tokens": [cfg_token]}}}, env={"MCP_GEN_UI_AUTH_TOKEN": env_token}) as (base, _, log):
        assert initialize(base, env_token)[0] == 200
        assert initialize(base, cfg_token)[0] == 200
        assert_refused(initialize(base))
    text = log.read_text()
    assert env_token not in text and cfg_token not in text
    assert "MCP_GEN_UI_AUTH_TOKEN" in text and "server.auth.tokens[0]" in text, "tokens are named by where they came from"


def test_an_empty_token_variable_means_no_token(tmp_path):
    """Compose writes MCP_GEN_UI_AUTH_TOKEN: ${MCP_GEN_UI_AUTH_TOKEN:-}: empty is unset, and a
    loopback listener stays open."""
    with token_proxy(tmp_path, env={"MCP_GEN_UI_AUTH_TOKEN": ""}) as (base, _, _):
        assert initialize(base)[0] == 200


def test_the_tokens_file_is_read_again_on_sighup(tmp_path):
    alpha, beta = "alpha-token-0a1b2c3d4e5f", "beta-token-9f8e7d6c5b4a"
    tokens = tmp_path / "tokens"
    tokens.write_text(f"# the ops team\n\n{alpha}\n")
    with token_proxy(tmp_path, config={"server": {"auth": {"tokensFile": str(tokens)}}}) as (base, proc, log):
        assert initialize(base, alpha)[0] == 200
        assert_refused(initialize(base, beta), error="invalid_token")

        tokens.write_text(f"# rotated\n{beta}\n")
        os.kill(proc.p.pid, signal.SIGHUP)
        wait_for(lambda: initialize(base, beta)[0] == 200, what="the new token to be accepted after SIGHUP")
        assert_refused(initialize(base, alpha), error="invalid_token")

        # A broken file is refused as a whole and the tokens in force stay.
        tokens.write_text(f"{alpha}\nnot a token\n")
        os.kill(proc.p.pid, signal.SIGHUP)
        wait_for(lambda: "tokens_reload_failed" in log.read_text(), what="the failed reload to be logged")
        assert initialize(base, beta)[0] == 200
        assert_refused(initialize(base, alpha), error="invalid_token")
        assert proc.p.poll() is None, "SIGHUP does not stop the service"
    text = log.read_text()
    assert alpha not in text and beta not in text
    assert "line 2" in text and "server.auth.tokensFile:2" in text


def test_metrics_on_a_separate_address_without_auth(tmp_path):
    mport = free_port()
    with token_proxy(tmp_path, ["--auth-token", TOKEN, "--metrics-listen", f"127.0.0.1:{mport}"]) as (base, proc, _):
        proc.read_line_matching(rf"metrics, no auth http://127\.0\.0\.1:{mport}/metrics")
        metrics = f"http://127.0.0.1:{mport}"
        code, _, text = request(metrics + "/metrics")
        assert code == 200 and "mcp_gen_ui_build_info" in text
        assert request(metrics + "/healthz")[0] == 200
        assert request(metrics + "/mcp", "POST", INIT, token=TOKEN)[0] == 404, "the metrics address serves metrics only"
        assert request(metrics + "/readyz")[0] == 404
        assert_refused(request(base + "/metrics"))
        assert request(base + "/metrics", token=TOKEN)[0] == 200


def test_a_token_is_generated_for_a_non_loopback_listener(tmp_path):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"logging": {"file": str(tmp_path / "service.log"), "level": "debug"}}))
    p = Proc("proxy-auth-generated", [str(BIN), "--demo", "--listen", "0.0.0.0:0", "--config", str(cfg)])
    try:
        port = p.read_line_matching(r"listening on http://0\.0\.0\.0:(\d+)").group(1)
        token = p.read_line_matching(r"http://127\.0\.0\.1:\d+/mcp with the header  Authorization: Bearer (\S+)").group(1)
        preview = p.read_line_matching(r"(http://127\.0\.0\.1:\d+)/preview#token=(\S+)")
        assert preview.group(2) == token
        assert len(token) >= 43 and re.fullmatch(r"[A-Za-z0-9_-]+", token), "32 random bytes, base64url"
        base = f"http://127.0.0.1:{port}"
        wait_http(base + "/readyz")
        assert_refused(initialize(base), says=("printed when it started",))
        assert initialize(base, token)[0] == 200
        assert "get_current_weather" in sdk(base, "mcp", token)
    finally:
        p.stop()
    text = (tmp_path / "service.log").read_text() + p.log_path.read_text()
    assert token not in text, "the generated token is printed once on stdout, never logged"
    assert "token generated-at-start authenticated" in text


def test_another_run_gets_another_token_and_no_auth_turns_it_off(tmp_path):
    def start(args):
        p = Proc("proxy-auth-noauth", [str(BIN), "--demo", "--listen", "0.0.0.0:0", *args])
        port = p.read_line_matching(r"listening on http://0\.0\.0\.0:(\d+)").group(1)
        return p, f"http://127.0.0.1:{port}"

    p, base = start(["--no-auth"])
    try:
        p.read_line_matching(r"auth\s+NONE \(--no-auth\)")
        wait_http(base + "/readyz")
        assert initialize(base)[0] == 200
    finally:
        p.stop()
    tokens = []
    for _ in range(2):
        p, _ = start([])
        try:
            tokens.append(p.read_line_matching(r"Authorization: Bearer (\S+)").group(1))
        finally:
            p.stop()
    assert tokens[0] != tokens[1]
    # Loopback keeps no-auth by default.
    with proxy_http(["--demo"], name="proxy-auth-loopback") as (base, p):
        p.read_line_matching(r"auth\s+none \(loopback only")
        assert initialize(base)[0] == 200
        assert request(base + "/metrics")[0] == 200


@pytest.mark.parametrize(
    "args,config,field",
    [
        (["--no-auth", "--auth-token", TOKEN], None, "--no-auth"),
        (["--auth-token", "two words"], None, "--auth-token"),
        ([], {"server": {"auth": {"tokensFile": "/nonexistent/tokens"}}}, "server.auth.tokensFile"),
        ([], {"server": {"auth": {"disabled": True, "tokens": [TOKEN]}}}, "server.auth.disabled"),
        (["--oauth-issuer", "http://as.example"], None, "server.auth.oauth.audience"),
        (["--oauth-issuer", "http://as.example", "--oauth-audience", "a"], None, "server.auth.oauth.jwksUrl"),
        (["--oauth-issuer", "http://as.example", "--oauth-audience", "a", "--oauth-jwks-url", "keys.json"], None, "--oauth-jwks-url"),
        (["--metrics-listen", "9464"], None, "--metrics-listen"),
        ([], {"server": {"auth": {"tokenz": []}}}, "server.auth.tokenz"),
    ],
)
def test_auth_config_errors_exit_2_naming_the_field(args, config, field, tmp_path):
    if config is not None:
        path = tmp_path / "c.json"
        path.write_text(json.dumps(config))
        args = ["--config", str(path), *args]
    out = subprocess.run([str(BIN), "--demo", *args], capture_output=True, text=True, timeout=10, env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 2, out
    assert field in out.stderr, out.stderr
    assert "two words" not in out.stderr and TOKEN not in out.stderr, "errors never quote a token"


# --- OAuth 2.1 resource server -----------------------------------------------------------------


class JwksServer:
    """Serves `self.keys` as a JWKS at /jwks and counts the fetches."""

    def __init__(self):
        self.keys = []
        self.hits = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                outer.hits += 1
                body = json.dumps({"keys": outer.keys}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()


def public_jwk(key, kid, alg):
    algo = {"RS256": RSAAlgorithm, "ES256": ECAlgorithm, "EdDSA": OKPAlgorithm}[alg]
    d = algo.to_jwk(key.public_key(), as_dict=True)
    d.update(kid=kid, use="sig", alg=alg)
    return d


AUDIENCE = "http://mcp.test/mcp"
SCOPE = "mcp:tools"


@pytest.fixture
def oauth(tmp_path):
    jwks = JwksServer()
    keys = {
        "rsa-1": (rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256"),
        "ec-1": (ec.generate_private_key(ec.SECP256R1()), "ES256"),
        "ed-1": (ed25519.Ed25519PrivateKey.generate(), "EdDSA"),
    }
    jwks.keys = [public_jwk(k, kid, alg) for kid, (k, alg) in keys.items()]
    issuer = jwks.url  # any URL; the JWKS server's own keeps the test to one server
    cfg = {"server": {"auth": {"oauth": {"requiredScopes": [SCOPE]}}}}

    def make(kid="rsa-1", key=None, alg=None, headers=None, **claims):
        now = int(time.time())
        body = {"iss": issuer, "aud": AUDIENCE, "sub": "alice@example.com", "iat": now, "exp": now + 600, "scope": f"{SCOPE} other"}
        body.update(claims)
        body = {k: v for k, v in body.items() if v is not None}
        k, a = keys.get(kid, (None, None))
        return jwt.encode(body, key or k, algorithm=alg or a, headers={"kid": kid, **(headers or {})})

    with token_proxy(tmp_path, ["--auth-token", TOKEN, "--oauth-issuer", issuer, "--oauth-audience", AUDIENCE, "--oauth-jwks-url", jwks.url + "/jwks"],
                     config=cfg, name="proxy-oauth") as (base, proc, log):
        wait_for(lambda: jwks.hits >= 1, what="the JWKS load at start")
        yield {"base": base, "proc": proc, "log": log, "jwks": jwks, "keys": keys, "make": make, "issuer": issuer}
    jwks.stop()


def test_oauth_valid_tokens_of_each_algorithm_and_the_sdk(oauth):
    base, make = oauth["base"], oauth["make"]
    for kid in ["rsa-1", "ec-1", "ed-1"]:
        code, _, body = initialize(base, make(kid))
        assert code == 200, (kid, body)
    assert initialize(base, make(scope=None, scp=[SCOPE, "x"]))[0] == 200, "scopes as an scp array"
    assert initialize(base, make(aud=["someone-else", AUDIENCE]))[0] == 200, "aud as an array that includes us"
    assert initialize(base, TOKEN)[0] == 200, "static tokens work beside OAuth"
    token = make("ed-1")
    assert "get_current_weather" in sdk(base, "mcp", token)
    assert "get_current_weather" in sdk(base, "sse", token)
    assert oauth["jwks"].hits == 1, "known keys never fetch the JWKS again"
    text = oauth["log"].read_text()
    assert "jwt sub=alice@example.com" in text, "the log names the subject"
    assert token not in text and token.split(".")[2] not in text


def test_a_remembered_token_is_not_taken_past_its_exp(oauth):
    """Validated tokens are remembered (issue 65: the signature check was most of a call's
    CPU), never past their `exp`: the same token, valid a moment ago, is refused once it
    expired (this one is in the service's 60 s of leeway for clock skew, for 2 s more)."""
    base, make = oauth["base"], oauth["make"]
    token = make(exp=int(time.time()) - 58)
    assert initialize(base, token)[0] == 200
    assert initialize(base, token)[0] == 200, "taken again at once"
    time.sleep(3.2)
    code, _, body = initialize(base, token)
    assert code == 401 and "expired" in body, (code, body)


@pytest.mark.parametrize(
    "claims,says",
    [
        (lambda now: {"exp": now - 600}, "expired"),
        (lambda now: {"nbf": now + 600}, "not valid yet"),
        (lambda now: {"aud": "http://other.test/mcp"}, "another audience"),
        (lambda now: {"iss": "http://evil.test"}, "another authorization server"),
        (lambda now: {"exp": None}, "no exp claim"),
    ],
    ids=["expired", "not-yet-valid", "wrong-audience", "wrong-issuer", "no-exp"],
)
def test_oauth_refuses_bad_claims(oauth, claims, says):
    token = oauth["make"](**claims(int(time.time())))
    challenge, _ = assert_refused(initialize(oauth["base"], token), error="invalid_token", says=(says,))
    assert f'resource_metadata="{oauth["base"]}/.well-known/oauth-protected-resource"' in challenge, challenge


def test_oauth_refuses_forged_and_unsupported_tokens(oauth):
    base, make = oauth["base"], oauth["make"]
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert_refused(initialize(base, make("rsa-1", key=stranger)), error="invalid_token", says=("signature",))
    assert_refused(initialize(base, make("rsa-1", key="a-shared-secret-of-32-bytes-len!", alg="HS256")), error="invalid_token", says=("HS256",))
    # A key in the token's own header is never trusted.
    embedded = public_jwk(stranger, "rsa-1", "RS256")
    assert_refused(initialize(base, make("rsa-1", key=stranger, headers={"jwk": embedded})), error="invalid_token")
    assert_refused(initialize(base, "not.a.jwt"), error="invalid_token")
    assert oauth["jwks"].hits == 1


def test_oauth_missing_scope_is_403_insufficient_scope(oauth):
    code, headers, body = initialize(oauth["base"], oauth["make"](scope="other"))
    assert code == 403, body
    challenge = headers["WWW-Authenticate"]
    assert 'error="insufficient_scope"' in challenge and f'scope="{SCOPE}"' in challenge, challenge
    assert SCOPE in json.loads(body)["error"]["message"]


def test_oauth_key_rotation_and_unknown_kids(oauth):
    base, make, jwks, keys = oauth["base"], oauth["make"], oauth["jwks"], oauth["keys"]
    assert jwks.hits == 1
    # The authorization server rotates: a new key appears in its JWKS.
    keys["rsa-2"] = (rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256")
    jwks.keys = jwks.keys + [public_jwk(keys["rsa-2"][0], "rsa-2", "RS256")]
    assert initialize(base, make("rsa-2"))[0] == 200, "an unknown kid fetches the JWKS again"
    assert jwks.hits == 2
    assert initialize(base, make("rsa-2"))[0] == 200 and jwks.hits == 2, "then it is cached"
    # Another unknown kid within the minute: no fetch, refused.
    keys["rsa-3"] = (rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256")
    assert_refused(initialize(base, make("rsa-3")), error="invalid_token", says=("not in the authorization server's JWKS",))
    jwks.keys = jwks.keys + [public_jwk(keys["rsa-3"][0], "rsa-3", "RS256")]
    for _ in range(5):
        assert_refused(initialize(base, make("rsa-3")), error="invalid_token")
    assert jwks.hits == 2, "unknown kids refetch at most once a minute"


def test_the_protected_resource_metadata_document(oauth):
    base = oauth["base"]
    for path in ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]:
        code, headers, body = request(base + path)
        assert code == 200 and headers["Content-Type"].startswith("application/json"), (path, code)
        doc = json.loads(body)
        assert doc["resource"] == base + "/mcp"
        assert doc["authorization_servers"] == [oauth["issuer"]]
        assert doc["scopes_supported"] == [SCOPE]
        assert doc["bearer_methods_supported"] == ["header"]
    # A 401 points to it and names the scope.
    challenge, message = assert_refused(initialize(base), says=("OAuth access token from " + oauth["issuer"],))
    assert f'resource_metadata="{base}/.well-known/oauth-protected-resource"' in challenge
    assert f'scope="{SCOPE}"' in challenge


# --- issue 24: what a hostile peer found ------------------------------------------------------


def test_oauth_refuses_tokens_with_critical_header_extensions(oauth):
    """RFC 7515 4.1.11: a header extension marked critical that the recipient does not
    understand makes the token invalid, however good its signature."""
    base, make = oauth["base"], oauth["make"]
    assert initialize(base, make("rsa-1", headers={"x-unknown": 1}))[0] == 200, "an extension not marked critical is fine"
    assert_refused(initialize(base, make("rsa-1", headers={"crit": ["x-unknown"], "x-unknown": 1})), error="invalid_token",
                   says=("critical", "x-unknown"))
    assert_refused(initialize(base, make("ec-1", headers={"crit": ["exp"]})), error="invalid_token", says=("critical",))


FORGED = {
    "X-Forwarded-Host": "x.evil</script><script>alert(document.domain)</script>",
    "Forwarded": "host=evil.example;proto=https",
    "X-Forwarded-Proto": "https",
}


def test_a_jwt_that_names_nobody_is_refused_and_subjects_are_kept_whole(oauth):
    """The subject owns sessions and refinements: a token without one, or with one that is
    not a printable name, is refused rather than merged into someone else."""
    base, make = oauth["base"], oauth["make"]
    assert_refused(initialize(base, make(sub=None)), error="invalid_token", says=("names no person",))
    assert_refused(initialize(base, make(sub="x" * 300)), error="invalid_token", says=("printable name",))
    # A client is not a person unless the operator says so (server.auth.oauth.clientIdsArePeople).
    assert_refused(initialize(base, make(sub=None, client_id="service-a")), error="invalid_token", says=("clientIdsArePeople",))


def test_forwarded_headers_from_an_untrusted_peer_do_not_choose_the_oauth_urls(oauth):
    base = oauth["base"]
    for forged in [FORGED, {"X-Forwarded-Host": "evil.example"}, {"Forwarded": "for=1.2.3.4;host=evil.example;proto=https"}]:
        code, headers, body = request(base + "/.well-known/oauth-protected-resource", headers=forged)
        assert code == 200, body
        assert json.loads(body)["resource"] == base + "/mcp", (forged, body)
        assert "X-Forwarded-Host" in headers.get("Vary", ""), "what may follow the request's host varies by it"
        challenge, _ = assert_refused(initialize(base, headers=forged), says=("OAuth access token",))
        assert f'resource_metadata="{base}/.well-known/oauth-protected-resource"' in challenge, challenge
        assert "evil" not in challenge


def test_the_oauth_metadata_refuses_a_dns_rebinding_host(oauth):
    code, _, body = request(oauth["base"] + "/.well-known/oauth-protected-resource", headers={"Host": "rebind.evil.example"})
    assert code == 403 and "--allowed-host" in body, (code, body)


def test_forwarded_headers_from_a_trusted_proxy_choose_the_urls_when_they_name_a_host(tmp_path):
    """With server.trustedProxies naming the proxy (here the test itself, on loopback), what it
    forwards is believed, if it is a host name; a script in it is not a host."""
    jwks = JwksServer()
    try:
        cfg = {"server": {"trustedProxies": ["127.0.0.1/32"], "auth": {"oauth": {"requiredScopes": [SCOPE]}}}}
        args = ["--oauth-issuer", jwks.url, "--oauth-audience", AUDIENCE, "--oauth-jwks-url", jwks.url + "/jwks"]
        with token_proxy(tmp_path, args, config=cfg, name="proxy-oauth-trusted") as (base, _proc, _log):
            url = base + "/.well-known/oauth-protected-resource"
            code, _, body = request(url, headers={"X-Forwarded-Host": "mcp.example.com", "X-Forwarded-Proto": "https"})
            assert code == 200 and json.loads(body)["resource"] == "https://mcp.example.com/mcp", body
            code, _, body = request(url, headers={"Forwarded": 'for=10.0.0.1;host="mcp.example.org:8443";proto=https'})
            assert json.loads(body)["resource"] == "https://mcp.example.org:8443/mcp", body
            code, _, body = request(url, headers={"X-Forwarded-Host": FORGED["X-Forwarded-Host"]})
            assert "<" not in body and "evil" not in body, (code, body)
    finally:
        jwks.stop()

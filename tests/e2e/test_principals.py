"""Issue 33: each person's own credentials upstream. A stdio server marked perPrincipal runs one
process per principal, started with that person's secrets from the principal secrets file
(secret_upstream.py says which it got); a person without the secret is refused clearly; idle
processes stop; the cap holds under a burst; the tool list is learned once and a person's
differing list is reported, not mixed in. A remote server behind a local authorization server
that implements RFC 8693 (exchange_peers.py) receives, for each person, a token minted for its
audience, never the one they signed in with; a revoked exchange is refused without leaking."""

import contextlib
import itertools
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from conftest import BIN, METRICS_TOKEN, metric, proxy_http, wait_for
from exchange_peers import CLIENT_ID, CLIENT_SECRET, AuthServer, RemoteServer
from test_auth import JwksServer, public_jwk, request
from test_teams import scrape_with

SECRET = Path(__file__).parent / "secret_upstream.py"
PEOPLE = {"alice": "alice-token-5f2e9c1b7a", "bob": "bob-token-0d8e4b6a2c", "carol": "carol-token-11aa22bb33", "dan": "dan-token-99cc88dd77"}
SECRETS = {"alice": {"SECRET_TOKEN": "ghp-alice-0001", "EXTRA_TOOLS": "0"},
           "bob": {"SECRET_TOKEN": "ghp-bob-0002", "EXTRA_TOOLS": "1"},
           "dan": {"SECRET_TOKEN": "ghp-dan-0004", "EXTRA_TOOLS": "0"}}
AUDIENCE = "http://mcp.test/mcp"
IDS = itertools.count(10)


def write_secrets(path: Path, secrets: dict, mode=0o600):
    path.write_text(json.dumps(secrets))
    os.chmod(path, mode)


@contextlib.contextmanager
def proxy(tmp_path, name, servers: dict, config: dict | None = None, args=()):
    servers_file = tmp_path / "servers.json"
    servers_file.write_text(json.dumps({"mcpServers": servers}))
    secrets = tmp_path / "secrets.json"
    if not secrets.exists():
        write_secrets(secrets, SECRETS)
    cfg = {"logging": {"file": str(tmp_path / "service.log")}, "audit": {"file": str(tmp_path / "audit.jsonl")}, **(config or {})}
    cfg_path = tmp_path / "config.json"
    cfg_path.write_text(json.dumps(cfg))
    tokens = [a for p, t in PEOPLE.items() for a in ("--auth-token", f"{p}:{t}")]
    argv = ["--servers-file", str(servers_file), "--config", str(cfg_path), "--principal-secrets", str(secrets), "--log-format", "json", *tokens, *args]
    with proxy_http(argv, name=name) as (base, proc):
        yield base, proc, tmp_path / "service.log"


def secret_server(**extra):
    return {"command": sys.executable, "args": [str(SECRET)], "perPrincipal": True,
            "env": {"SECRET_TOKEN": "${principal:SECRET_TOKEN}", "EXTRA_TOOLS": "${principal:EXTRA_TOOLS}"}, **extra}


def session(base, token):
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "p", "version": "1"}}}
    code, headers, text = request(base + "/mcp", "POST", body, token=token)
    assert code == 200, text
    sid = headers["Mcp-Session-Id"]
    request(base + "/mcp", "POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, token=token, headers={"Mcp-Session-Id": sid})
    return sid


def rpc(base, token, sid, method, params=None, timeout=30, request_id=None):
    """`request_id` is sent as X-Request-Id, which the audit line of the call carries."""
    headers = {"Mcp-Session-Id": sid, **({"X-Request-Id": request_id} if request_id else {})}
    code, _, text = request(base + "/mcp", "POST", {"jsonrpc": "2.0", "id": next(IDS), "method": method, "params": params or {}},
                            token=token, headers=headers, timeout=timeout)
    assert code == 200, (code, text)
    return json.loads(text)


def listed_once_learned(base, token, sid, tool, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        names = {t["name"] for t in rpc(base, token, sid, "tools/list")["result"]["tools"]}
        if tool in names:
            return names
        time.sleep(0.3)
    raise AssertionError(f"{tool} never listed")


def whoami(base, token, sid, tool="secret__whoami", request_id=None):
    return rpc(base, token, sid, "tools/call", {"name": tool, "arguments": {}}, request_id=request_id)


def audited_calls(tmp_path) -> list[dict]:
    """The trail's lines for calls (answered, refused or denied)."""
    lines = [json.loads(x) for x in (tmp_path / "audit.jsonl").read_text().splitlines()]
    return [x for x in lines if x["event"] in ("tool_call", "denied")]


def whose(calls: list[dict]) -> list[tuple]:
    """Each call line as (principal, tool, whose credentials, outcome), in a stable order."""
    return whose_sorted((c["principal"], c.get("tool"), c.get("credentials"), c["outcome"]) for c in calls)


def whose_sorted(rows) -> list[tuple]:
    return sorted(rows, key=repr)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def test_each_person_reaches_the_server_as_themselves(tmp_path):
    with proxy(tmp_path, "proxy-principals", {"secret": secret_server(), "other": secret_server()},
               config={"principalSecrets": {"idleSecs": 3}}) as (base, _proc, log):
        a, b, c = session(base, PEOPLE["alice"]), session(base, PEOPLE["bob"]), session(base, PEOPLE["carol"])
        state = json.loads(request(base + "/readyz")[2])
        assert {s["name"]: s["state"] for s in state["servers"]} == {"secret": "on demand", "other": "on demand"}
        # Listing starts alice's process, which teaches the service the server's tools.
        names = listed_once_learned(base, PEOPLE["alice"], a, "secret__whoami")
        assert "secret__extra" not in names
        mine, bobs = whoami(base, PEOPLE["alice"], a), whoami(base, PEOPLE["bob"], b)
        assert mine["result"]["structuredContent"]["secret"] == "ghp-alice-0001"
        assert bobs["result"]["structuredContent"]["secret"] == "ghp-bob-0002"
        assert mine["result"]["structuredContent"]["pid"] != bobs["result"]["structuredContent"]["pid"], "one process each"
        # Carol has no entry: a clear refusal, never someone else's credentials.
        refused = whoami(base, PEOPLE["carol"], c)
        msg = refused["error"]["message"]
        assert "SECRET_TOKEN" in msg and "carol" in msg and "--principal-secrets" in msg, msg
        assert "ghp-" not in json.dumps(refused)
        # Bob's server lists a tool the team's does not: reported, not mixed in.
        assert "secret__extra" not in {t["name"] for t in rpc(base, PEOPLE["bob"], b, "tools/list")["result"]["tools"]}
        samples = scrape_with(base, METRICS_TOKEN)
        assert metric(samples, "mcp_gen_ui_principal_tool_lists_differ_total", server="secret") >= 1
        assert metric(samples, "mcp_gen_ui_principal_connections", server="secret", principal="alice", source="token") == 1
        assert metric(samples, "mcp_gen_ui_principal_starts_total", server="secret", outcome="missing_secret") >= 1
        state = json.loads(request(base + "/readyz")[2])
        secret = next(s for s in state["servers"] if s["name"] == "secret")
        assert secret["perPrincipal"]["running"] == 2 and secret["tools"] == 1, secret
        assert "alice" not in json.dumps(state), "/readyz does not name people"
        # The trail says whose credentials each call went with, never the credentials: one line
        # for each of the three calls, no more; carol's refusal went with no one's.
        expected = [("alice", "secret__whoami", "alice", "ok"), ("bob", "secret__whoami", "bob", "ok"), ("carol", "secret__whoami", None, "error")]
        wait_for(lambda: len(audited_calls(tmp_path)) >= len(expected), 10, "the three calls' lines in the trail")
        assert whose(audited_calls(tmp_path)) == whose_sorted(expected), audited_calls(tmp_path)
        audit = (tmp_path / "audit.jsonl").read_text()
        text = audit + log.read_text()
        for s in ("ghp-alice-0001", "ghp-bob-0002", *PEOPLE.values()):
            assert s not in text, f"{s} reached the log or the trail"
        # Idle processes stop (idleSecs 3): the process is gone, the next call starts another.
        pid = mine["result"]["structuredContent"]["pid"]
        deadline = time.time() + 15
        while time.time() < deadline and alive(pid):
            time.sleep(0.3)
        assert not alive(pid), "an idle person's process is stopped"
        again = whoami(base, PEOPLE["alice"], a)
        assert again["result"]["structuredContent"]["secret"] == "ghp-alice-0001"
        assert again["result"]["structuredContent"]["pid"] != pid
    # Stopped, the service has written its whole trail: those three lines and alice's last call.
    assert whose(audited_calls(tmp_path)) == whose_sorted([*expected, ("alice", "secret__whoami", "alice", "ok")])


def test_the_caps_hold_under_a_burst(tmp_path):
    with proxy(tmp_path, "proxy-principals-cap", {"secret": secret_server(perPrincipalMax=2)},
               config={"principalSecrets": {"maxProcesses": 5}}) as (base, _proc, _log):
        people = ["alice", "bob", "dan"]
        sids = {p: session(base, PEOPLE[p]) for p in people}
        listed_once_learned(base, PEOPLE["alice"], sids["alice"], "secret__whoami")

        def call(job):
            n, p = job
            rid = f"burst-{n}-{p}"  # X-Request-Id: finds this call's line in the trail
            return p, rid, whoami(base, PEOPLE[p], sids[p], request_id=rid)

        with ThreadPoolExecutor(6) as pool:
            results = list(pool.map(call, enumerate(people * 4)))
        ok = {p for p, _, r in results if "result" in r}
        full = [r["error"]["message"] for p, _, r in results if "error" in r]
        assert len(ok) == 2, ok
        assert full and all("already runs 2 connections" in m and "perPrincipalMax" in m for m in full), full
        # Every answer went with its own caller's credentials, never another's; a refusal with none.
        for p, rid, r in results:
            if "result" in r:
                assert r["result"]["structuredContent"]["secret"] == SECRETS[p]["SECRET_TOKEN"], (p, rid, r)
            else:
                assert "ghp-" not in json.dumps(r), (p, rid, r)
        pids = {p: {r["result"]["structuredContent"]["pid"] for q, _, r in results if q == p and "result" in r} for p in ok}
        assert all(len(v) == 1 for v in pids.values()) and len(set.union(*pids.values())) == len(ok), f"one process per person: {pids}"
        state = json.loads(request(base + "/readyz")[2])
        assert state["servers"][0]["perPrincipal"]["running"] == 2
        assert metric(scrape_with(base, METRICS_TOKEN), "mcp_gen_ui_principal_starts_total", server="secret", outcome="server_full") >= 1
    # Stopped, the service has written its whole trail: exactly one line per call of the burst
    # (no other call was made), each with its caller and whose credentials it went with.
    calls = audited_calls(tmp_path)
    got = {c.get("request_id"): (c["principal"], c.get("tool"), c.get("credentials"), c["outcome"]) for c in calls}
    want = {rid: (p, "secret__whoami", p, "ok") if "result" in r else (p, "secret__whoami", None, "error") for p, rid, r in results}
    assert len(calls) == len(got) and got == want, calls


def test_a_changed_secret_takes_effect_and_a_readable_file_is_refused(tmp_path):
    with proxy(tmp_path, "proxy-principals-reload", {"secret": secret_server()}) as (base, proc, log):
        a = session(base, PEOPLE["alice"])
        listed_once_learned(base, PEOPLE["alice"], a, "secret__whoami")
        assert whoami(base, PEOPLE["alice"], a)["result"]["structuredContent"]["secret"] == "ghp-alice-0001"
        write_secrets(tmp_path / "secrets.json", {**SECRETS, "alice": {"SECRET_TOKEN": "ghp-alice-rotated", "EXTRA_TOOLS": "0"}})
        os.kill(proc.p.pid, 1)
        deadline = time.time() + 15
        got = None
        while time.time() < deadline:
            got = whoami(base, PEOPLE["alice"], a)
            if got.get("result", {}).get("structuredContent", {}).get("secret") == "ghp-alice-rotated":
                break
            time.sleep(0.3)
        assert got["result"]["structuredContent"]["secret"] == "ghp-alice-rotated", got
        assert "ghp-alice-rotated" not in log.read_text()
    bad = tmp_path / "open.json"
    write_secrets(bad, SECRETS, mode=0o644)
    servers = tmp_path / "s2.json"
    servers.write_text(json.dumps({"mcpServers": {"secret": secret_server()}}))
    r = subprocess.run([str(BIN), "--servers-file", str(servers), "--principal-secrets", str(bad), "--auth-token", "a:tttttttttttttttttttt", "--listen", "127.0.0.1:0"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--principal-secrets" in r.stderr and "chmod 600" in r.stderr, r.stderr
    r = subprocess.run([str(BIN), "--servers-file", str(servers), "--listen", "127.0.0.1:0", "--no-auth"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "servers.secret.perPrincipal" in r.stderr and "--auth-token" in r.stderr, r.stderr


def test_a_remote_server_gets_a_token_exchanged_for_each_person(tmp_path):
    users = JwksServer()
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    users.keys = [public_jwk(key, "k1", "RS256")]
    auth = AuthServer(key.public_key())
    remote = RemoteServer(auth, audience="https://remote.test")

    def sign_in(sub):
        now = int(time.time())
        return jwt.encode({"iss": users.url, "aud": AUDIENCE, "sub": sub, "iat": now, "exp": now + 600}, key, algorithm="RS256", headers={"kid": "k1"})

    try:
        servers = {"remote": {"type": "http", "url": remote.url, "perPrincipal": True, "tokenExchange": {
            "tokenEndpoint": auth.url + "/token", "clientId": CLIENT_ID, "clientSecret": "${env:EXCHANGE_SECRET}",
            "audience": "https://remote.test", "scopes": ["tools:call"]}}}
        args = ["--oauth-issuer", users.url, "--oauth-audience", AUDIENCE, "--oauth-jwks-url", users.url + "/jwks"]
        os.environ["EXCHANGE_SECRET"] = CLIENT_SECRET
        with proxy(tmp_path, "proxy-principals-exchange", servers, args=args) as (base, _proc, log):
            erin, frank = sign_in("erin@example.com"), sign_in("frank@example.com")
            se, sf = session(base, erin), session(base, frank)
            listed_once_learned(base, erin, se, "remote__whoami")
            for token, sid, sub in [(erin, se, "erin@example.com"), (frank, sf, "frank@example.com")]:
                who = whoami(base, token, sid, "remote__whoami")["result"]["structuredContent"]
                assert who == {"sub": sub, "aud": "https://remote.test", "act": CLIENT_ID}, who
            assert all(erin not in s and frank not in s for s in remote.seen), "the token they signed in with never reaches the server"
            grants = [r for r in auth.requests if r.get("grant_type") == "urn:ietf:params:oauth:grant-type:token-exchange"]
            assert grants and all(g["audience"] == "https://remote.test" and g["scope"] == "tools:call" and g["subject_token_seen"] for g in grants)
            exchanges = len(grants)
            for _ in range(3):
                whoami(base, erin, se, "remote__whoami")
            assert len([r for r in auth.requests if r.get("grant_type")]) == exchanges, "the token is kept until shortly before it expires"
            # A revoked person: refused by the authorization server, refused here, nothing leaked.
            auth.revoked.add("gina@example.com")
            gina = sign_in("gina@example.com")
            sg = session(base, gina)
            refused = whoami(base, gina, sg, "remote__whoami")
            text = json.dumps(refused)
            assert "error" in refused and "invalid_grant" in text, refused
            assert gina not in text and "client-secret" not in text and "revoked" not in text, "only the OAuth error code is said"
            # A static token cannot be exchanged.
            sa = session(base, PEOPLE["alice"])
            refused = whoami(base, PEOPLE["alice"], sa, "remote__whoami")
            assert "did not sign in with one" in refused["error"]["message"], refused
            samples = scrape_with(base, METRICS_TOKEN)
            assert metric(samples, "mcp_gen_ui_token_exchanges_total", server="remote", outcome="ok") >= 2
            assert metric(samples, "mcp_gen_ui_token_exchanges_total", server="remote", outcome="refused") >= 1
            logged = log.read_text()
            assert CLIENT_SECRET not in logged and erin not in logged and "eyJ" not in logged, "no token or secret in the log"
    finally:
        os.environ.pop("EXCHANGE_SECRET", None)
        users.stop()
        auth.stop()
        remote.stop()


def test_names_from_different_sources_never_merge_unless_the_operator_says_so(tmp_path):
    """Issue 42: a static token labelled alice, a JWT with sub=alice and a JWT with only
    client_id=alice were one person (her secrets, her rules). Now a subject that spells a
    token's label is refused, a client is never a person unless configured, and the config
    maps a label and a subject to one person: one process, one name in rules and the trail,
    which still says which credential it was."""
    users = JwksServer()
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    users.keys = [public_jwk(key, "k1", "RS256")]

    def sign_in(**claims):
        now = int(time.time())
        body = {"iss": users.url, "aud": AUDIENCE, "iat": now, "exp": now + 600, **claims}
        return jwt.encode(body, key, algorithm="RS256", headers={"kid": "k1"})

    oauth = ["--oauth-issuer", users.url, "--oauth-audience", AUDIENCE, "--oauth-jwks-url", users.url + "/jwks"]
    policy = {"default": "allow", "rules": [
        {"name": "jwt no extra", "tools": ["secret__whoami"], "effect": "deny", "when": "principal.source == 'jwt' && principal.name == 'bob'"}]}
    try:
        # Unmapped: the label and the subject are two principals, and they cannot be told apart.
        first = tmp_path / "unmapped"
        first.mkdir()
        with proxy(first, "proxy-identity-unmapped", {"secret": secret_server()}, args=oauth) as (base, _proc, log):
            code, _, text = request(base + "/mcp", "POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "p", "version": "1"}}}, token=sign_in(sub="alice"))
            assert code == 401 and "spells the name of a static token" in text, (code, text)
            code, _, text = request(base + "/mcp", "POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize"},
                                    token=sign_in(client_id="alice"))
            assert code == 401 and "clientIdsArePeople" in text, (code, text)
            sa = session(base, PEOPLE["alice"])
            listed_once_learned(base, PEOPLE["alice"], sa, "secret__whoami")
            assert whoami(base, PEOPLE["alice"], sa)["result"]["structuredContent"]["secret"] == "ghp-alice-0001"
            # A subject that spells no label is its own person, with no one's secrets.
            eve = sign_in(sub="eve")
            se = session(base, eve)
            refused = whoami(base, eve, se)
            assert "SECRET_TOKEN for eve:" in refused["error"]["message"] and "ghp-" not in json.dumps(refused), refused
        # Mapped: the operator says the label alice and the subject u-248 are one person.
        second = tmp_path / "mapped"
        second.mkdir()
        cfg = {"server": {"auth": {"people": {"alice": {"tokens": ["alice"], "subjects": ["u-248"]}, "bob": {"tokens": ["bob"], "subjects": ["u-316"]}},
                                   "oauth": {"clientIdsArePeople": True}}},
               "policy": policy}
        with proxy(second, "proxy-identity-mapped", {"secret": secret_server()}, config=cfg, args=oauth) as (base, _proc, log):
            by_jwt = sign_in(sub="u-248")
            sa, sj = session(base, PEOPLE["alice"]), session(base, by_jwt)
            listed_once_learned(base, PEOPLE["alice"], sa, "secret__whoami")
            via_token = whoami(base, PEOPLE["alice"], sa, request_id="id-token")["result"]["structuredContent"]
            via_jwt = whoami(base, by_jwt, sj, request_id="id-jwt")["result"]["structuredContent"]
            assert via_token == via_jwt and via_jwt["secret"] == "ghp-alice-0001", "one person: one process, her secrets"
            # Bob signs in with a JWT only: the rule on the source denies him; his token does not.
            bob_jwt = sign_in(sub="u-316")
            sbj, sbt = session(base, bob_jwt), session(base, PEOPLE["bob"])
            denied = whoami(base, bob_jwt, sbj, request_id="id-bob-jwt")
            assert "error" in denied and "ghp-bob" not in json.dumps(denied), denied
            assert "not permitted for this principal" in denied["error"]["message"], denied
            assert whoami(base, PEOPLE["bob"], sbt)["result"]["structuredContent"]["secret"] == "ghp-bob-0002"
            # A client stands for itself, named client:..., with nobody's secrets.
            client = sign_in(client_id="alice")
            sc = session(base, client)
            refused = whoami(base, client, sc)
            assert "SECRET_TOKEN for client:alice:" in refused["error"]["message"], refused
            assert "ghp-alice" not in json.dumps(refused)
            lines = {x.get("request_id"): x for x in map(json.loads, (second / "audit.jsonl").read_text().splitlines())}
            assert (lines["id-token"]["principal"], lines["id-token"]["source"]) == ("alice", "token")
            assert (lines["id-jwt"]["principal"], lines["id-jwt"]["source"]) == ("alice", "jwt")
            assert (lines["id-bob-jwt"]["principal"], lines["id-bob-jwt"]["source"], lines["id-bob-jwt"]["outcome"]) == ("bob", "jwt", "denied")
            samples = scrape_with(base, METRICS_TOKEN)
            assert metric(samples, "mcp_gen_ui_principal_connections", server="secret", principal="alice", source="token") == 1
            assert metric(samples, "mcp_gen_ui_principal_connections", server="secret", principal="alice", source="jwt") == 0
    finally:
        users.stop()

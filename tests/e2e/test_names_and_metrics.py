"""Issue 51 items 6 and 12: a name has one source (a JWT subject can never spell an unlabelled
token's `#<digest>` or a client's `client:<id>`, and so never gets their secrets, rules or admin
right), and `/metrics`, which names the people and their servers, is for the admins and the
scrape's own token when several people can sign in."""

import hashlib
import json
import time

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from conftest import METRICS_TOKEN
from test_auth import JwksServer, public_jwk, request, token_proxy
from test_principals import AUDIENCE, SECRETS, proxy, secret_server, session, whoami, write_secrets

UNLABELLED = "plain-token-without-label-31f7"
ALICE, BOB = "alice:alice-token-6b1d9e", "bob:bob-token-2c8f0a"


def test_a_subject_never_spells_an_unlabelled_token_or_a_client(tmp_path):
    users = JwksServer()
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    users.keys = [public_jwk(key, "k1", "RS256")]

    def sign_in(**claims):
        now = int(time.time())
        return jwt.encode({"iss": users.url, "aud": AUDIENCE, "iat": now, "exp": now + 600, **claims}, key, algorithm="RS256",
                          headers={"kid": "k1"})

    # The name an unlabelled token goes by: `#` and 12 hex digits of its SHA-256.
    hashed = "#" + hashlib.sha256(UNLABELLED.encode()).hexdigest()[:12]
    write_secrets(tmp_path / "secrets.json", {**SECRETS, hashed: {"SECRET_TOKEN": "ghp-unlabelled-0005", "EXTRA_TOOLS": "0"},
                                              "client:svc": {"SECRET_TOKEN": "ghp-client-svc-0006", "EXTRA_TOOLS": "0"}})
    oauth = ["--oauth-issuer", users.url, "--oauth-audience", AUDIENCE, "--oauth-jwks-url", users.url + "/jwks", "--auth-token", UNLABELLED]
    cfg = {"server": {"auth": {"oauth": {"clientIdsArePeople": True}}}}
    try:
        with proxy(tmp_path, "proxy-names-one-source", {"secret": secret_server()}, config=cfg, args=oauth) as (base, _proc, _log):
            # The token itself is that name, with its secrets.
            st = session(base, UNLABELLED)
            assert whoami(base, UNLABELLED, st)["result"]["structuredContent"]["secret"] == "ghp-unlabelled-0005"
            # A client is client:svc, with the client's secrets.
            client = sign_in(client_id="svc")
            sc = session(base, client)
            assert whoami(base, client, sc)["result"]["structuredContent"]["secret"] == "ghp-client-svc-0006"
            # Subjects spelling either name are refused before anything is theirs.
            for spelled in (hashed, "client:svc"):
                code, _, text = request(base + "/mcp", "POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "p", "version": "1"}}},
                    token=sign_in(sub=spelled))
                assert code == 401 and "can never be either" in text, (spelled, code, text)
                assert "ghp-" not in text
            lines = [json.loads(x) for x in (tmp_path / "audit.jsonl").read_text().splitlines()]
            assert {x["principal"] for x in lines if x["event"] == "tool_call"} == {hashed, "client:svc"}, lines
    finally:
        users.stop()


def test_metrics_are_for_the_admins_and_the_scrapes_token_when_several_people_sign_in(tmp_path):
    with token_proxy(tmp_path, ["--auth-token", ALICE, "--auth-token", BOB], config={"server": {"auth": {"admins": ["alice"]}}},
                     name="proxy-metrics-access") as (base, _proc, log):
        code, _, text = request(base + "/metrics", token=BOB.split(":", 1)[1])
        assert code == 403 and "server.auth.admins" in text and "metricsTokens" in text, (code, text)
        assert "mcp_gen_ui_" not in text
        code, _, text = request(base + "/metrics", token=ALICE.split(":", 1)[1])
        assert code == 200 and "mcp_gen_ui_build_info" in text, "an admin reads them"
        code, _, text = request(base + "/metrics", token=METRICS_TOKEN)
        assert code == 200 and "mcp_gen_ui_refusals_total{reason=\"forbidden\"} 1" in text, "the scrape's token reads them; bob's refusal counted"
        code, _, text = request(base + "/mcp", "POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize"}, token=METRICS_TOKEN)
        assert code == 401, "the scrape's token opens nothing else"
        code, _, _ = request(base + "/metrics")
        assert code == 401
    assert METRICS_TOKEN not in log.read_text()


def test_a_scrape_token_that_is_also_a_hosts_token_is_refused(tmp_path):
    from test_check import start

    (tmp_path / "config.json").write_text(json.dumps({"server": {"auth": {"tokens": [UNLABELLED], "metricsTokens": [UNLABELLED]}}}))
    code, said = start("--demo", "--config", str(tmp_path / "config.json"))
    assert code == 2 and "server.auth.metricsTokens[0]: is also a token for /mcp" in said, said
    assert UNLABELLED not in said

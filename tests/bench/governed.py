"""Benchmark (prints figures and ratios, asserts nothing): issue 65, what the features a team
runs cost on the call path, in one run, rounds alternating: wrk drives `tools/call echo` into one
Streamable HTTP session of each configuration, server-everything over stdio behind it.

- plain: no authentication, no rules, no trail (the bare proxy);
- governed: as a team runs it: two people's tokens (the calls are bob's), 20 rules of the
  shapes people write (by tool name, by person, by argument, by JWT group; most name tools),
  the audit trail to a file, the per-tool metrics (always on), pins as they are by default
  (`warn`); and the same with a quota every call counts against;
- jwt: governed, bob authenticated by an RS256 JWT checked against a local JWKS;
- each part alone (tokens only, rules only, trail only), so the difference is placed;
- mcp-proxy 0.6.0 (the Rust peer, `rust_peer.py` installs it) when tests/.peers has it.

CPU per call: utime+stime of the service process around the load (the upstream child not
counted), divided by the calls; calls/s at c8. Ratios against plain of the same run.

    tests/.venv/bin/python tests/bench/governed.py [--seconds 5] [--rounds 3] [--no-build]
"""

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from benchlib import EVERYTHING_STDIO, TICK_US, Wrk, conftest, http_session, process_cpu, summary, use_release

BOB = "bob-bench-token-65-9c2f7e1a"
ALICE = "alice-bench-token-65-4b8d3f0e"
ISSUER_AUD = "http://mcp.bench/mcp"


def twenty_rules() -> dict:
    """The shapes people write: by tool, by person, by argument, by group; most name tools."""
    rules = []
    for i in range(8):
        rules.append({"name": f"team {i} tools", "tools": [f"team{i}__*"], "effect": "allow", "when": f"principal.name == 'team{i}'"})
    for i in range(4):
        rules.append({"name": f"no writes {i}", "tools": [f"fs{i}__write_*", f"fs{i}__delete_*"], "effect": "deny"})
    rules.append({"name": "no secret messages", "tools": ["echo", "*__echo"], "effect": "deny", "when": "has(args.message) && args.message == 'secret'"})
    rules.append({"name": "ops may restart", "tools": ["*restart*"], "effect": "allow", "when": "'ops' in principal.claims.groups"})
    rules.append({"name": "mallory nothing", "effect": "deny", "when": "principal.name == 'mallory'"})
    rules.append({"name": "read-only interns", "kinds": ["tools"], "effect": "deny", "when": "principal.name.startsWith('intern') && !annotations.readOnlyHint"})
    rules.append({"name": "no big sums", "tools": ["get-sum", "*__get-sum"], "effect": "deny", "when": "has(args.a) && args.a > 1000000"})
    rules.append({"name": "contractors by day", "tools": ["admin__*"], "effect": "deny", "when": "'contractors' in principal.claims.groups"})
    rules.append({"name": "ops everything", "effect": "allow", "when": "'ops' in principal.claims.groups"})
    rules.append({"name": "the rest", "effect": "allow"})
    return {"default": "deny", "rules": rules}


def with_quota(policy: dict) -> dict:
    """The same rules and a quota no call reaches (every call counted)."""
    quota = {"name": "a big quota", "tools": ["*"], "effect": "limit", "calls": 100000000, "per": "minute"}
    return {**policy, "rules": [quota, *policy["rules"]]}


class Jwks:
    """A local JWKS (test_auth's server) with one RS256 key, and a token of bob's signed by it."""

    def __init__(self):
        import jwt
        from cryptography.hazmat.primitives.asymmetric import rsa
        from test_auth import JwksServer, public_jwk

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.server = JwksServer()
        self.server.keys = [public_jwk(key, "k1", "RS256")]
        self.url = self.server.url
        now = int(time.time())
        claims = {"iss": self.url, "aud": ISSUER_AUD, "sub": "bob", "iat": now, "exp": now + 3600, "groups": ["dev"]}
        self.token = jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})

    def stop(self):
        self.server.stop()


def modes(tmp: Path, jwks: Jwks) -> dict:
    tokens = ["--auth-token", f"alice:{ALICE}", "--auth-token", f"bob:{BOB}"]
    trail = lambda name: {"audit": {"file": str(tmp / f"{name}.jsonl")}}
    jwt_args = ["--oauth-issuer", jwks.url, "--oauth-audience", ISSUER_AUD, "--oauth-jwks-url", jwks.url + "/jwks", "--auth-token", f"alice:{ALICE}"]
    return {
        "plain": ({}, [], None),
        "governed": ({"policy": twenty_rules(), **trail("governed")}, tokens, BOB),
        "jwt": ({"policy": twenty_rules(), **trail("jwt")}, jwt_args, jwks.token),
        "governed+quota": ({"policy": with_quota(twenty_rules()), **trail("quota")}, tokens, BOB),
        "tokens only": ({}, tokens, BOB),
        "rules only": ({"policy": twenty_rules()}, [], None),
        "trail only": (trail("trail-only"), [], None),
    }


def run(w: Wrk, a, name: str, mode: tuple, tmp: Path) -> dict:
    config, extra, token = mode
    path = tmp / f"{name.replace(' ', '-')}.json"
    path.write_text(json.dumps(config))
    args = ["--upstream", EVERYTHING_STDIO, "--log-level", "warn", "--config", str(path), *extra]
    with conftest.proxy_http(args, name=f"bench-governed-{name.replace(' ', '-')}") as (base, proc):
        url = base + "/mcp"
        sid = http_session(url, None, token=token)
        w.run(url, sid, a.connections, 1, token=token)  # warm-up
        before = process_cpu(proc.p.pid)
        r = w.run(url, sid, a.connections, a.seconds, token=token)
        r["cpu_us"] = (process_cpu(proc.p.pid) - before) * TICK_US / max(r["requests"], 1)
        r["errors"] = r.get("errors", 0)
    return r


def peer_run(w: Wrk, a, folder: Path) -> dict | None:
    """One round of the Rust peer (rust_peer.py's), when it is installed."""
    import rust_peer

    if not rust_peer.PEER.exists():
        return None
    with rust_peer.Peer(folder) as p:
        return rust_peer.measure(w, p, a)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    binary = use_release(not a.no_build)
    tmp = Path(tempfile.mkdtemp(prefix="bench-governed-"))
    jwks = Jwks()
    all_modes = modes(tmp, jwks)
    w = Wrk()
    print(f"{binary}; wrk c{a.connections}, {a.seconds:g} s windows, {a.rounds} rounds alternating", flush=True)
    runs = {k: [] for k in all_modes}
    peer = []
    try:
        for _ in range(a.rounds):
            for k, m in all_modes.items():
                runs[k].append(run(w, a, k, m, tmp))
            p = peer_run(w, a, tmp)
            if p:
                peer.append(p)
    finally:
        w.close()
        jwks.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print()
    print(f"{'':14} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'CPU us':>7}")
    rps, cpu = {}, {}
    for k, rs in runs.items():
        for r in rs:
            print(f"{k:14} {r['rps']:9.0f} {r['p50_ms']:8.3f} {r['p99_ms']:8.3f} {r['cpu_us']:7.1f}")
        rps[k] = statistics.median(r["rps"] for r in rs)
        cpu[k] = statistics.median(r["cpu_us"] for r in rs)
    rows = [("plain: CPU per call (median), calls/s", f"{cpu['plain']:.1f} us, {rps['plain']:.0f}", "-", None)]
    for k in all_modes:
        if k != "plain":
            rows.append((f"{k} / plain: CPU per call", f"{cpu[k] / cpu['plain']:.2f}x", "<= 1.15x" if k == "governed" else "-",
                         cpu[k] / cpu["plain"] <= 1.15 if k == "governed" else None))
            rows.append((f"{k} / plain: calls/s c{a.connections}", f"{rps[k] / rps['plain']:.2f}x", "-", None))
    if peer:
        pc = statistics.median(p["cpu_us"] for p in peer)
        pr = statistics.median(p["rps"] for p in peer)
        rows.append(("governed / mcp-proxy: CPU per call", f"{cpu['governed'] / pc:.2f}x", "<= 0.5x", cpu["governed"] / pc <= 0.5))
        rows.append(("governed / mcp-proxy: calls/s", f"{rps['governed'] / pr:.2f}x", ">= 1.3x", rps["governed"] / pr >= 1.3))
    else:
        rows.append(("mcp-proxy", "not installed (tests/bench/rust_peer.py installs it)", "-", None))
    summary("governed.py (issue 65: the governed path against the plain one, same run)", rows)


if __name__ == "__main__":
    main()

"""Benchmark (prints figures, asserts nothing): issue 33's cost of acting as each person, in one
run: a stdio server (tests/e2e/secret_upstream.py) marked perPrincipal, against the same server
shared by everyone, behind one service:

- a person's first call (their process starts: spawn, initialize, the call), median over people;
- their later calls, median, against calls to the shared server (the baseline);
- memory per idle person's slot: the service's RSS and its children's, before and after N
  people's processes started, divided by N.

    tests/.venv/bin/python tests/bench/principals.py [--people 20] [--calls 200] [--no-build]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchlib import ROOT, conftest, rss_kb, summary, use_release

sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from test_auth import request  # noqa: E402

SECRET = ROOT / "tests" / "e2e" / "secret_upstream.py"


def children_rss_kb(pid: int) -> int:
    total = 0
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text().rsplit(")", 1)[1].split()
            if int(stat[1]) == pid:
                total += rss_kb(int(d.name)) + children_rss_kb(int(d.name))
        except (OSError, ValueError, IndexError):
            continue
    return total


def call(base, token, sid, tool):
    start = time.perf_counter()
    code, _, text = request(base + "/mcp", "POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": {}}},
                            token=token, headers={"Mcp-Session-Id": sid}, timeout=60)
    assert code == 200 and "result" in json.loads(text), text
    return (time.perf_counter() - start) * 1000


def session(base, token):
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}}}
    code, headers, _ = request(base + "/mcp", "POST", body, token=token)
    assert code == 200
    return headers["Mcp-Session-Id"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--people", type=int, default=20)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    use_release(not a.no_build)
    tmp = Path(tempfile.mkdtemp(prefix="bench-principals-"))
    people = {f"p{i}": f"token-{i:04d}-bench-principal" for i in range(a.people)}
    secrets = tmp / "secrets.json"
    secrets.write_text(json.dumps({p: {"SECRET_TOKEN": f"s-{p}"} for p in people}))
    os.chmod(secrets, 0o600)
    base_entry = {"command": sys.executable, "args": [str(SECRET)]}
    servers = tmp / "servers.json"
    servers.write_text(json.dumps({"mcpServers": {
        "shared": {**base_entry, "env": {"SECRET_TOKEN": "shared"}},
        "mine": {**base_entry, "env": {"SECRET_TOKEN": "${principal:SECRET_TOKEN}"}, "perPrincipal": True, "perPrincipalMax": a.people}}}))
    cfg = tmp / "config.json"
    cfg.write_text(json.dumps({"principalSecrets": {"maxProcesses": a.people, "idleSecs": 3600}}))
    tokens = [x for p, t in people.items() for x in ("--auth-token", f"{p}:{t}")]
    argv = ["--servers-file", str(servers), "--config", str(cfg), "--principal-secrets", str(secrets), "--log-level", "warn", *tokens]
    with conftest.proxy_http(argv, name="bench-principals") as (base, proc):
        sids = {p: session(base, t) for p, t in people.items()}
        first_token, first_sid = next(iter(people.values())), next(iter(sids.values()))
        # The tool list is learned from the first person's process: wait for it.
        deadline = time.time() + 30
        while time.time() < deadline:
            code, _, text = request(base + "/mcp", "POST", {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, token=first_token, headers={"Mcp-Session-Id": first_sid})
            if "mine__whoami" in text:
                break
            time.sleep(0.2)
        time.sleep(1)
        before = rss_kb(proc.p.pid) + children_rss_kb(proc.p.pid)
        firsts = [call(base, people[p], sids[p], "mine__whoami") for p in list(people)[1:]]
        time.sleep(1)
        after = rss_kb(proc.p.pid) + children_rss_kb(proc.p.pid)
        later, shared = [], []
        for i in range(a.calls):  # interleaved: drift hits both alike
            p = list(people)[i % len(people)]
            later.append(call(base, people[p], sids[p], "mine__whoami"))
            shared.append(call(base, people[p], sids[p], "shared__whoami"))
    started = len(firsts)
    rows = [
        ("shared server, a call (median)", f"{statistics.median(shared):.2f} ms", "baseline", None),
        ("per person, first call (process start, median)", f"{statistics.median(firsts):.1f} ms", "-", None),
        ("per person, later calls (median)", f"{statistics.median(later):.2f} ms ({statistics.median(later) / statistics.median(shared):.2f}x)", "-", None),
        (f"memory per idle person's slot ({started} started)", f"{(after - before) / max(started, 1) / 1024:.1f} MB (service + child)", "-", None),
    ]
    summary("principals.py (issue 33: a person's own process, first and later calls, against a shared server)", rows)


if __name__ == "__main__":
    main()

"""Benchmark (prints figures, asserts nothing): issue 41's cost of the delivery rule (what a server
sends toward hosts reaches only the person it belongs to) on tools/call throughput with two
people calling, in one run on loopback (wrk, tools/call echo, server-everything over stdio
behind the proxy), rounds interleaved so drift hits every mode alike, medians compared with the
no-auth baseline of the same run:

- no auth, two sessions (the baseline): two Streamable HTTP sessions, a wrk process into each
  (half the connections each), both at once; throughput is the sum of the two;
- two people: the service started with `--auth-token alice:<token>` and `--auth-token bob:<token>`
  (random tokens), alice's session and bob's, each opened with its token, a wrk process into each
  sending its own `Authorization: Bearer` header, both at once.

Issue 41's target: two people / no auth >= 0.97. The service's CPU per call is printed beside
calls/s: it is steadier on shared cores, where the two wrk processes and the upstream take turns
with the service.

    tests/.venv/bin/python tests/bench/people.py [--seconds 5] [--connections 8] [--rounds 3] [--no-build]
"""

import argparse
import os
import secrets
import statistics

from benchlib import EVERYTHING_STDIO, TICK_US, UI_CAPS, Wrk, conftest, http_session, summary, threads_cpu, use_release

PEOPLE = ("alice", "bob")


def both(w: Wrk, url: str, sessions: list[tuple[str, str | None]], connections: int, seconds: float) -> list[dict]:
    """One wrk process per (session id, token), all started before any is waited for."""
    each = max(1, connections // len(sessions))
    started = [w.start(url, sid, each, seconds, token=token) for sid, token in sessions]
    return [w.finish(p) for p in started]


def run(w: Wrk, a, name: str, tokens: dict[str, str] | None) -> dict:
    args = ["--upstream", EVERYTHING_STDIO, "--log-level", "warn"]
    for person, token in (tokens or {}).items():
        args += ["--auth-token", f"{person}:{token}"]
    with conftest.proxy_http(args, name=f"bench-people-{name}") as (base, proc):
        url = base + "/mcp"
        people = list(tokens.values()) if tokens else [None, None]
        sessions = [(http_session(url, UI_CAPS, token=t), t) for t in people]
        both(w, url, sessions, a.connections, 1)  # warm-up
        before = threads_cpu(proc.p.pid)
        rs = both(w, url, sessions, a.connections, a.seconds)
        after = threads_cpu(proc.p.pid)
    used = sum(ticks - before.get(tid, (comm, 0))[1] for tid, (comm, ticks) in after.items())
    requests = sum(r["requests"] for r in rs)
    return {
        "rps": sum(r["rps"] for r in rs),
        "each": [r["rps"] for r in rs],
        "requests": requests,
        "bad": sum(r["bad"] + r["socket_errors"] for r in rs),
        # The worse of the two wrk processes (their latency histograms cannot be merged).
        "p50_ms": max(r["p50_ms"] for r in rs),
        "p99_ms": max(r["p99_ms"] for r in rs),
        # The service's CPU per call: steadier than calls/s on shared cores, where the load
        # generators and the upstream take turns with it.
        "cpu_us": used * TICK_US / max(requests, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--connections", type=int, default=8, help="in all: half to each session")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-build", action="store_true", help="use the release binary as it is")
    a = ap.parse_args()
    binary = use_release(not a.no_build)
    modes = {
        "no auth": None,
        "two people": {p: secrets.token_urlsafe(24) for p in PEOPLE},
    }
    w = Wrk()
    print(f"{binary}; {os.cpu_count()} CPUs; two wrk at once, {max(1, a.connections // 2)} connections each, {a.seconds:g} s windows, {a.rounds} rounds, interleaved",
          flush=True)
    runs = {k: [] for k in modes}
    try:
        for _ in range(a.rounds):
            for k, tokens in modes.items():
                runs[k].append(run(w, a, k.replace(" ", "-"), tokens))
    finally:
        w.close()
    print()
    print(f"{'':12} {'calls/s':>9} {'(one':>7} {'other)':>7} {'p50 ms':>8} {'p99 ms':>8} {'CPU us':>7} {'bad':>6}")
    median, cpu = {}, {}
    for k, rs in runs.items():
        for r in rs:
            print(f"{k:12} {r['rps']:9.0f} {r['each'][0]:7.0f} {r['each'][1]:7.0f} {r['p50_ms']:8.3f} {r['p99_ms']:8.3f} {r['cpu_us']:7.1f} {r['bad']:6d}")
        median[k] = statistics.median(r["rps"] for r in rs)
        cpu[k] = statistics.median(r["cpu_us"] for r in rs)
    base = median["no auth"]
    ratio = median["two people"] / base
    rows = [
        ("no auth, two sessions, calls/s (median, both together)", f"{base:.0f}", "-", None),
        ("two people, calls/s (median, both together)", f"{median['two people']:.0f}", "-", None),
        ("two people / no auth", f"{ratio:.3f}x", ">= 0.97x", ratio >= 0.97),
        ("service CPU per call, no auth (median)", f"{cpu['no auth']:.1f} us", "-", None),
        ("service CPU per call, two people / no auth", f"{cpu['two people'] / cpu['no auth']:.3f}x", "-", None),
    ]
    summary("people.py (issue 41: tools/call throughput with two people calling, against no auth, same run)", rows)


if __name__ == "__main__":
    main()

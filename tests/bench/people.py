"""Benchmark (prints figures, asserts nothing): issue 41's cost of the delivery rule (what a server
sends toward hosts reaches only the person it belongs to) on tools/call throughput with two
people calling, in one run on loopback, rounds interleaved so drift hits every mode alike,
medians compared with the no-auth baseline of the same run.

The load speaks toward hosts on every call (issue 52: an `echo` load sends nothing for the rule
to decide): the upstream is tests/e2e/chatty_upstream.py over stdio, and one session's calls are
its `log` (a log line, notifications/message, during the call) and the other's its `touch` (a
resource update, notifications/resources/updated, for a resource both sessions subscribed to).
Each session asked for log lines (logging/setLevel info) and holds its GET stream open, read
by a thread of this script that counts what reaches it.

- no auth, two sessions (the baseline): two Streamable HTTP sessions, a wrk process into each
  (half the connections each), both at once; throughput is the sum of the two;
- two people: the service started with `--auth-token alice:<token>` and `--auth-token bob:<token>`
  (random tokens), alice's session and bob's, each opened with its token, a wrk process into each
  sending its own `Authorization: Bearer` header, both at once.

Issue 41's target: two people / no auth >= 0.97. The service's CPU per call is printed beside
calls/s: it is steadier on shared cores, where the two wrk processes and the upstream take turns
with the service. The notifications each session's stream received during the window are
printed too (what the rule let through).

    tests/.venv/bin/python tests/bench/people.py [--seconds 5] [--connections 8] [--rounds 3] [--no-build]
"""

import argparse
import os
import secrets
import socket
import statistics
import sys
import threading
from urllib.parse import urlsplit

from benchlib import ROOT, TICK_US, UI_CAPS, HttpMcp, Wrk, conftest, summary, threads_cpu, use_release

PEOPLE = ("alice", "bob")
CHATTY = f"{sys.executable} {ROOT / 'tests' / 'e2e' / 'chatty_upstream.py'}"
SHARED = "note://shared"
# What each session calls: a log line during the call, a resource update during the call.
LOADS = ({"name": "log", "arguments": {"text": "a line", "level": "info"}}, {"name": "touch", "arguments": {"uri": SHARED}})


class Listener:
    """A session made to hear what the server says (log lines at info, updates of SHARED), with
    its GET stream held open and read by a thread that counts the notifications arriving."""

    def __init__(self, url: str, token: str | None):
        c = HttpMcp(url, UI_CAPS, token=token)
        for method, params in (("logging/setLevel", {"level": "info"}), ("resources/subscribe", {"uri": SHARED})):
            a = c.request(method, params)
            assert "result" in a, a
        c.close()
        self.sid, self.counts, self.lock = c.sid, {"notifications/message": 0, "notifications/resources/updated": 0}, threading.Lock()
        u = urlsplit(url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=30)
        auth = f"Authorization: Bearer {token}\r\n" if token else ""
        self.sock.sendall((f"GET /mcp HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nAccept: text/event-stream\r\n"
                           f"Mcp-Session-Id: {self.sid}\r\nMCP-Protocol-Version: 2025-06-18\r\n{auth}\r\n").encode())
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def read(self) -> None:
        rest = b""
        try:
            while chunk := self.sock.recv(65536):
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                with self.lock:
                    for line in lines:
                        for method in self.counts:
                            if line.startswith(b"data:") and method.encode() in line:
                                self.counts[method] += 1
        except OSError:
            pass

    def snapshot(self) -> dict:
        with self.lock:
            return dict(self.counts)

    def close(self) -> None:
        self.sock.close()


def both(w: Wrk, url: str, sessions: list[tuple[str, str | None]], connections: int, seconds: float) -> list[dict]:
    """One wrk process per (session id, token), all started before any is waited for, each
    making its session's calls (LOADS, in order)."""
    each = max(1, connections // len(sessions))
    started = [w.start(url, sid, each, seconds, params=load, token=token) for (sid, token), load in zip(sessions, LOADS)]
    return [w.finish(p) for p in started]


def run(w: Wrk, a, name: str, tokens: dict[str, str] | None) -> dict:
    args = ["--upstream", CHATTY, "--log-level", "warn"]
    for person, token in (tokens or {}).items():
        args += ["--auth-token", f"{person}:{token}"]
    with conftest.proxy_http(args, name=f"bench-people-{name}") as (base, proc):
        url = base + "/mcp"
        people = list(tokens.values()) if tokens else [None, None]
        listeners = [Listener(url, t) for t in people]
        try:
            sessions = [(x.sid, t) for x, t in zip(listeners, people)]
            both(w, url, sessions, a.connections, 1)  # warm-up
            heard_before = [x.snapshot() for x in listeners]
            before = threads_cpu(proc.p.pid)
            rs = both(w, url, sessions, a.connections, a.seconds)
            after = threads_cpu(proc.p.pid)
            heard = [{k: v - b[k] for k, v in x.snapshot().items()} for x, b in zip(listeners, heard_before)]
        finally:
            for x in listeners:
                x.close()
    used = sum(ticks - before.get(tid, (comm, 0))[1] for tid, (comm, ticks) in after.items())
    requests = sum(r["requests"] for r in rs)
    return {
        "heard": heard,
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
    print(f"{'':12} {'calls/s':>9} {'(log':>7} {'touch)':>7} {'p50 ms':>8} {'p99 ms':>8} {'CPU us':>7} {'bad':>6}  heard by each session (log lines, updates)")
    median, cpu = {}, {}
    for k, rs in runs.items():
        for r in rs:
            heard = ", ".join(f"{h['notifications/message']}/{h['notifications/resources/updated']}" for h in r["heard"])
            print(f"{k:12} {r['rps']:9.0f} {r['each'][0]:7.0f} {r['each'][1]:7.0f} {r['p50_ms']:8.3f} {r['p99_ms']:8.3f} {r['cpu_us']:7.1f} {r['bad']:6d}  {heard}")
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
    for k, rs in runs.items():
        lines = statistics.median(sum(h["notifications/message"] for h in r["heard"]) / a.seconds for r in rs)
        updates = statistics.median(sum(h["notifications/resources/updated"] for h in r["heard"]) / a.seconds for r in rs)
        rows.append((f"{k}: notifications reaching the two sessions' streams a second (median)", f"{lines:.0f} log lines, {updates:.0f} updates", "-", None))
    summary("people.py (issue 41: tools/call throughput with two people calling, the server logging and notifying on every call, "
            "against no auth, same run)", rows)


if __name__ == "__main__":
    main()

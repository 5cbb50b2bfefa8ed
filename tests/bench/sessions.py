"""Benchmark (prints figures, asserts nothing): what open host sessions cost (issue 44),
measured in one run against the release binary with the bundled demo upstream (--demo):

- RSS idle (ready and settled, no session yet): the baseline;
- a burst of 3,000 Streamable HTTP sessions, each initialized (initialize +
  notifications/initialized) and holding its GET stream open (GET /mcp, Accept:
  text/event-stream): RSS with all of them open, in KB a session;
- the burst ended, half each way: 1,500 closed with DELETE (their streams then closed), the
  other 1,500 dropped (the stream's socket closed, no DELETE) and left to the idle timeout
  (server.sessionIdleTimeoutSecs 5); once mcp_gen_ui_host_sessions says 0 and a few seconds
  more, RSS settled, in MB above idle;
- a second burst the same way, and RSS once it has ended too;
- the baseline, in the same service once both bursts have ended (their memory handed back):
  as many bare HTTP/1.1 keep-alive connections, each after one GET /healthz and held open, in KB
  a connection, divided by the connections still open when RSS was read (counted just before
  the reading, and again after it). That is what actix-http holds for any open connection (its
  8 KB read and write buffers and the connection's task), so a session's own cost is its figure
  less this one. The same measured in a fresh service of its own is printed beside it (what this
  bench used to divide by; a fresh process touches pages the bursts' process already has).

Targets (issue 44): at most 10 KB a session (the connection's own floor is printed beside it); back within 10 MB of idle once a burst has ended;
the second burst adds nothing lasting (within 1 MB of what the first left).

The client holds every stream on a socket of its own (no thread per stream: the GET is sent,
the response head read, the socket kept); RSS is the service's own (its pid), never the
client's. The open-files limit is raised to the hard limit, for this process and the service
it starts.

    tests/.venv/bin/python tests/bench/sessions.py [--sessions 3000] [--idle-secs 5] [--sse-keepalive-secs N] [--no-build]
"""

import argparse
import http.client
import json
import resource
import socket
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

from benchlib import UI_CAPS, conftest, rss_kb, settled_rss_kb, summary, use_release

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
INIT = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": UI_CAPS, "clientInfo": {"name": "bench-sessions", "version": "1"}}})
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
THREADS = 8  # connections initializing (and deleting) sessions at once
LOCK = threading.Lock()


def tally(statuses: Counter, what: str) -> None:
    with LOCK:
        statuses[what] += 1


def raise_nofile() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def open_sessions(host: str, port: int, n: int, statuses: Counter) -> list[str]:
    """n sessions initialized (initialize + notifications/initialized), THREADS at a time over
    kept-alive connections; their ids (refusals are counted in `statuses`, not retried)."""
    def worker(count: int) -> list[str]:
        c = http.client.HTTPConnection(host, port, timeout=60)
        out = []
        try:
            for _ in range(count):
                c.request("POST", "/mcp", INIT, HEADERS)
                r = c.getresponse()
                r.read()
                sid = r.getheader("mcp-session-id")
                if r.status != 200 or not sid:
                    tally(statuses, f"initialize {r.status}")
                    continue
                c.request("POST", "/mcp", INITIALIZED, {**HEADERS, "Mcp-Session-Id": sid})
                r = c.getresponse()
                r.read()
                if r.status not in (200, 202):
                    tally(statuses, f"initialized {r.status}")
                    continue
                out.append(sid)
        finally:
            c.close()
        return out

    with ThreadPoolExecutor(THREADS) as pool:
        return [sid for part in pool.map(worker, [n // THREADS + (i < n % THREADS) for i in range(THREADS)]) for sid in part]


def open_stream(host: str, port: int, sid: str, statuses: Counter) -> socket.socket | None:
    """GET /mcp for the session's own stream on a socket of its own: the request sent, the
    response head read, the socket returned open (None, counted, when refused)."""
    s, head = conftest.open_session_stream(host, port, sid)
    status = head.split(b" ", 2)[1].decode() if head.startswith(b"HTTP/") else "no answer"
    if status != "200":
        tally(statuses, f"GET {status}")
        s.close()
        return None
    return s


def delete_sessions(host: str, port: int, sids: list[str], statuses: Counter) -> None:
    def worker(part: list[str]) -> None:
        c = http.client.HTTPConnection(host, port, timeout=60)
        try:
            for sid in part:
                c.request("DELETE", "/mcp", headers={"Mcp-Session-Id": sid})
                r = c.getresponse()
                r.read()
                if r.status not in (200, 204):
                    tally(statuses, f"DELETE {r.status}")
        finally:
            c.close()

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(worker, [sids[i::THREADS] for i in range(THREADS)]))


def still_open(held: list[socket.socket]) -> int:
    """How many of `held` the service has not closed (nothing to read and no end of stream)."""
    n = 0
    for s in held:
        s.setblocking(False)
        try:
            n += s.recv(1, socket.MSG_PEEK) != b""
        except BlockingIOError:
            n += 1  # nothing to read and not closed: open
        except OSError:
            pass  # reset: closed
    return n


def bare_connections(base: str, pid: int, n: int) -> dict:
    """n connections opened THREADS at a time, each answered one GET /healthz (kept alive),
    held while RSS settles (briefly: actix-web closes an idle keep-alive connection after 5 s),
    then closed; how many were open just before RSS was read (the divisor: what closes during
    the reading was in it), and just after."""
    u = urlsplit(base)
    req = f"GET /healthz HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\n\r\n".encode()

    def one(_: int) -> socket.socket:
        s = socket.create_connection((u.hostname, u.port), timeout=30)
        s.sendall(req)
        r = http.client.HTTPResponse(s)
        r.begin()
        r.read()
        return s

    before = settled_rss_kb(pid)
    t = time.perf_counter()
    with ThreadPoolExecutor(THREADS) as pool:
        held = list(pool.map(one, range(n)))
    opened = time.perf_counter() - t
    open_before = still_open(held)
    during = settled_rss_kb(pid, least=0.2, window=0.2, most=2)
    open_after = still_open(held)
    for s in held:
        s.close()
    if open_after < n:
        print(f"  ({open_before} of {n} bare connections open just before RSS was read, {open_after} just after; "
              f"opening took {opened:.1f} s)", flush=True)
    return {"before": before, "during": during, "open": open_before, "open_after": open_after}


def open_count(base: str) -> int:
    return int(conftest.metric(conftest.scrape(base), "mcp_gen_ui_host_sessions", transport="streamable-http"))


def burst(base: str, pid: int, n: int, idle_secs: int, statuses: Counter) -> dict:
    """n sessions with their streams open, then ended (half DELETE, half idle out)."""
    u = urlsplit(base)
    t = time.perf_counter()
    sids = open_sessions(u.hostname, u.port, n, statuses)
    streams = [(sid, open_stream(u.hostname, u.port, sid, statuses)) for sid in sids]
    streams = [(sid, s) for sid, s in streams if s is not None]
    opened = time.perf_counter() - t
    during = settled_rss_kb(pid)
    counted = open_count(base)
    print(f"  {len(streams)} sessions with their stream open in {opened:.1f} s (the service counts {counted}); "
          f"RSS {during / 1024:.1f} MB", flush=True)

    half = len(streams) // 2
    t = time.perf_counter()
    delete_sessions(u.hostname, u.port, [sid for sid, _ in streams[:half]], statuses)
    for _, s in streams:
        s.close()
    conftest.wait_for(lambda: open_count(base) <= len(streams) - half, 300, "the deleted sessions to be gone", every=0.2)
    deleted = time.perf_counter() - t
    conftest.wait_for(lambda: open_count(base) == 0, 300, "mcp_gen_ui_host_sessions to be 0", every=0.5)
    gone = time.perf_counter() - t
    time.sleep(3)
    after = settled_rss_kb(pid)
    print(f"  {half} deleted (gone {deleted:.1f} s after), {len(streams) - half} dropped (idle timeout {idle_secs} s): "
          f"all gone {gone:.1f} s after; RSS {after / 1024:.1f} MB", flush=True)
    return {"open": len(streams), "counted": counted, "during": during, "after": after, "gone_s": gone, "opened_s": opened}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=3000)
    ap.add_argument("--idle-secs", type=int, default=5, help="server.sessionIdleTimeoutSecs")
    ap.add_argument("--sse-keepalive-secs", type=int, help="server.sseKeepaliveSecs (default: the service's, 15)")
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    use_release(not a.no_build)
    nofile = raise_nofile()
    if nofile < 2 * a.sessions + 256:
        print(f"open-files limit {nofile}: too few for {a.sessions} streams on both sides of loopback (ulimit -Hn)", flush=True)
    folder = Path(tempfile.mkdtemp(prefix="mcp-bench-sessions-"))
    cfg = folder / "config.json"
    server = {"sessionIdleTimeoutSecs": a.idle_secs, "maxConnectionsPerClient": max(256, 2 * a.sessions + 64)}
    if a.sse_keepalive_secs:
        server["sseKeepaliveSecs"] = a.sse_keepalive_secs
    cfg.write_text(json.dumps({"server": server, "limits": {"maxSessions": 2 * a.sessions}}))
    statuses: Counter = Counter()
    t0 = time.perf_counter()
    with conftest.proxy_http(["--demo", "--config", str(cfg), "--log-level", "warn"], name="bench-sessions") as (base, proc):
        pid = proc.p.pid
        idle = settled_rss_kb(pid, least=2)
        print(f"idle: RSS {idle / 1024:.1f} MB (open files: {nofile})", flush=True)
        print(f"burst 1: {a.sessions} sessions ...", flush=True)
        first = burst(base, pid, a.sessions, a.idle_secs, statuses)
        print(f"burst 2: {a.sessions} sessions ...", flush=True)
        second = burst(base, pid, a.sessions, a.idle_secs, statuses)
        refusals = {dict(k[1]).get("reason"): v for k, v in conftest.scrape(base).items() if k[0] == "mcp_gen_ui_refusals_total" and v}
        final = rss_kb(pid)
        bare = bare_connections(base, pid, a.sessions)
    with conftest.proxy_http(["--demo", "--config", str(cfg), "--log-level", "warn"], name="bench-bare") as (base, proc):
        fresh = bare_connections(base, proc.p.pid, a.sessions)
    floor = (bare["during"] - bare["before"]) / max(bare["open"], 1)
    fresh_floor = (fresh["during"] - fresh["before"]) / max(fresh["open"], 1)
    print(f"baseline: {bare['open']} bare keep-alive connections (of {a.sessions}) in the same service after the bursts: "
          f"{floor:.1f} KB a connection (in a fresh service: {fresh_floor:.1f} KB, {fresh['open']} open)", flush=True)
    print(f"({time.perf_counter() - t0:.0f} s; RSS at the end {final / 1024:.1f} MB)")
    if statuses:
        print(f"refused or failed on the client's side: {dict(statuses)}")
    if refusals:
        print(f"mcp_gen_ui_refusals_total: {refusals}")

    rows = [("RSS idle", f"{idle / 1024:.1f} MB", "baseline", None)]
    for i, b in ((1, first), (2, second)):
        per = (b["during"] - idle) / max(b["open"], 1)
        rows.append((f"RSS with {b['open']} sessions and streams open, burst {i}",
                     f"{b['during'] / 1024:.1f} MB (+{(b['during'] - idle) / 1024:.1f} MB)", "-", None))
        rows.append((f"per session, burst {i}", f"{per:.1f} KB", "<= 10 KB", per <= 10))
        rows.append((f"  of it the session's own (less a bare connection), burst {i}", f"{per - floor:.1f} KB", "-", None))
    rows.append((f"baseline: a bare HTTP/1.1 keep-alive connection, same service after the bursts ({bare['open']} open at the reading)",
                 f"{floor:.1f} KB", "-", None))
    rows.append((f"  the same in a fresh service ({fresh['open']} open at the reading)", f"{fresh_floor:.1f} KB", "-", None))
    for i, b in ((1, first), (2, second)):
        above = (b["after"] - idle) / 1024
        rows.append((f"RSS above idle once burst {i} ended ({b['gone_s']:.0f} s to 0 sessions, +3 s)",
                     f"{above:+.1f} MB ({b['after'] / 1024:.1f} MB)", "<= 10 MB", above <= 10))
    lasting = (second["after"] - first["after"]) / 1024
    rows.append(("what the second burst left over the first", f"{lasting:+.1f} MB", "<= 1 MB", lasting <= 1))
    summary(f"{a.sessions} sessions with their streams open", rows)


if __name__ == "__main__":
    main()

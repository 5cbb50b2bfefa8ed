"""Soak benchmark (prints figures, asserts nothing): what weeks of running look like, in a few
minutes. The proxy wraps server-everything over stdio.

1. Session churn: 10,000 Streamable HTTP sessions opened and closed (initialize + DELETE, a few
   threads on keep-alive connections); RSS after a warm-up of 500 and after the 10,000.
2. Upstream kills under load: a steady tools/call load (a few threads, each its own session)
   while the upstream child process is killed (SIGKILL) 20 times; each kill waits until the
   proxy has restarted the upstream and served some load again. Prints requests sent, answered
   and errored, the longest wait for an answer, and the restarts the proxy counted
   (`mcp_gen_ui_upstream_restarts_total`).

The proxy restarts a failing upstream with a doubling backoff (1 s, 2 s, ... 30 s, reset after
60 s of health), so 20 kills of one proxy take about 8 minutes. By default the kills are spread
over 4 proxies killed side by side (5 each, about a minute); `--proxies 1` puts all of them on
the first.
Loopback only.

    tests/.venv/bin/python tests/bench/soak.py [--sessions 10000] [--kills 20] [--proxies 4] [--threads 4]
"""

import argparse
import contextlib
import http.client
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from conftest import churn_sessions, everything_cmd, metric, proxy_http, proxy_rss_kb, scrape  # noqa: E402

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def children(pid: int) -> list[int]:
    out = []
    for t in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            out += [int(c) for c in (t / "children").read_text().split()]
    return out


def ready(base: str) -> bool:
    with contextlib.suppress(Exception):
        u = urlsplit(base)
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=2)
        c.request("GET", "/readyz")
        ok = c.getresponse().status == 200
        c.close()
        return ok
    return False


class Load:
    """Threads that each keep a session and call get-sum in a loop, re-initializing when the
    session is lost; every call's outcome and wait is recorded."""

    def __init__(self, bases: list[str], threads: int):
        self.lock = threading.Lock()
        self.sent = self.answered = self.errored = 0
        self.longest = 0.0
        self.errors: dict[str, int] = {}
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(bases[i % len(bases)],), daemon=True) for i in range(threads)]
        for t in self.threads:
            t.start()

    def note(self, ok: bool, wait: float, why: str = ""):
        with self.lock:
            self.sent += 1
            self.longest = max(self.longest, wait)
            if ok:
                self.answered += 1
            else:
                self.errored += 1
                key = why[:80]
                self.errors[key] = self.errors.get(key, 0) + 1

    def run(self, base: str):
        u = urlsplit(base)
        conn, sid, n = None, None, 0
        while not self.stop.is_set():
            try:
                if conn is None:
                    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
                    conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                        "protocolVersion": "2025-06-18", "clientInfo": {"name": "soak", "version": "1"}, "capabilities": {}}}).encode(), HEADERS)
                    r = conn.getresponse()
                    r.read()
                    sid = r.headers.get("mcp-session-id")
                    if r.status != 200 or not sid:
                        raise OSError(f"initialize answered HTTP {r.status}")
                n += 1
                body = json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "get-sum", "arguments": {"a": n, "b": 1}}})
                started = time.monotonic()
                conn.request("POST", "/mcp", body.encode(), {**HEADERS, "Mcp-Session-Id": sid})
                r = conn.getresponse()
                raw = r.read().decode()
                wait = time.monotonic() - started
                if r.status == 404:  # the session is gone: open another
                    conn.close()
                    conn = None
                    self.note(False, wait, "session lost (404)")
                    continue
                datas = [line[5:].strip() for line in raw.splitlines() if line.startswith("data:") and line[5:].strip()]
                answer = json.loads(datas[-1] if datas else raw)
                if "result" in answer and not answer["result"].get("isError"):
                    self.note(True, wait)
                else:
                    self.note(False, wait, json.dumps(answer.get("error", answer.get("result")))[:80])
            except (OSError, http.client.HTTPException, ValueError) as e:
                self.note(False, 0.0, f"{type(e).__name__}: {e}")
                with contextlib.suppress(Exception):
                    conn.close()
                conn = None
                time.sleep(0.05)
        with contextlib.suppress(Exception):
            conn.close()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=90)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=10_000)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--proxies", type=int, default=4, help="spread the kills over this many proxies (backoff makes 20 kills of one take ~8 min)")
    ap.add_argument("--threads", type=int, default=4)
    a = ap.parse_args()
    upstream = ["--upstream", " ".join(everything_cmd("stdio")), "--log-level", "warn"]
    env = {"PATH": os.environ["PATH"]}
    with contextlib.ExitStack() as stack:
        proxies = [stack.enter_context(proxy_http(upstream, name=f"proxy-soak-{i}", env=env)) for i in range(a.proxies)]
        bases = [b for b, _ in proxies]
        pids = [p.p.pid for _, p in proxies]

        # 1. Session churn.
        base, pid = bases[0], pids[0]
        rss_start = proxy_rss_kb(pid)
        churn_sessions(base, 500)
        time.sleep(1)
        rss_warm = proxy_rss_kb(pid)
        t0 = time.time()
        opened = churn_sessions(base, a.sessions)
        churn_s = time.time() - t0
        time.sleep(2)
        rss_churned = proxy_rss_kb(pid)

        # 2. Kills under load: one killer per proxy, all at once.
        load = Load(bases, a.threads)
        t0 = time.time()
        recover: list[float] = []
        counted = threading.Lock()
        done = [0]

        def killer(i: int, n: int):
            for _ in range(n):
                deadline = time.time() + 120
                while not children(pids[i]) and time.time() < deadline:
                    time.sleep(0.05)
                time.sleep(0.5)  # some load on a healthy upstream first
                kid = children(pids[i])[0]
                os.kill(kid, signal.SIGKILL)
                killed_at = time.time()
                while time.time() < deadline and (kid in children(pids[i]) or not ready(bases[i])):
                    time.sleep(0.05)
                with counted:
                    recover.append(time.time() - killed_at)
                    done[0] += 1
                    print(f"  kill {done[0]:2}/{a.kills} (proxy {i}, pid {kid}): ready again after {recover[-1]:.1f} s", flush=True)

        killers = [threading.Thread(target=killer, args=(i, a.kills // a.proxies + (i < a.kills % a.proxies))) for i in range(a.proxies)]
        for t in killers:
            t.start()
        for t in killers:
            t.join()
        kills = done[0]
        time.sleep(2)  # load on the recovered upstreams
        load.finish()
        kills_s = time.time() - t0
        restarts = [metric(scrape(b), "mcp_gen_ui_upstream_restarts_total") for b in bases]
        rss_end = proxy_rss_kb(pid)
        rss_all = [proxy_rss_kb(p) for p in pids]

    print()
    print(f"session churn: {opened} sessions opened and closed in {churn_s:.1f} s ({opened / churn_s:.0f}/s) on proxy 0")
    print(f"  RSS proxy 0: start {rss_start / 1024:.1f} MB, after warm-up (500) {rss_warm / 1024:.1f} MB, "
          f"after {opened} {rss_churned / 1024:.1f} MB (growth {(rss_churned - rss_warm) / 1024:+.1f} MB), "
          f"after the kills {rss_end / 1024:.1f} MB")
    print(f"upstream kills: {kills} over {a.proxies} proxies in {kills_s:.0f} s under {a.threads} load threads; "
          f"ready again after {min(recover):.1f}..{max(recover):.1f} s")
    print(f"  restarts counted (mcp_gen_ui_upstream_restarts_total): {sum(restarts):.0f} ({', '.join(f'{r:.0f}' for r in restarts)})")
    print(f"  requests: sent {load.sent}, answered {load.answered}, errored {load.errored}; longest wait for an answer {load.longest:.2f} s")
    for why, n in sorted(load.errors.items(), key=lambda kv: -kv[1])[:5]:
        print(f"    {n:6} x {why}")
    print(f"  RSS after: {', '.join(f'{r / 1024:.1f} MB' for r in rss_all)}")


if __name__ == "__main__":
    main()

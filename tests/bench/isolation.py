"""Benchmark (prints figures, asserts nothing): does making large pages slow down proxied calls?
Issue 11's figure: p99 of proxied tools/call while ~420 KB generated pages are post-processed,
against the p99 without, measured in one run.

The proxy wraps server-everything over stdio with the fake LLM (tests/e2e/fake_llm.py) as its
provider, answering every generation with a valid ~420 KB page (a large table). wrk sends
tools/call echo on one Streamable HTTP session; in alternate windows, driver sessions keep
`_ui_regenerate` going over the upstream's tools at a fixed pace (each regeneration: classify
once per tool, the LLM answer, post-processing, the ready read result built and stored),
so quiet and busy windows interleave and share any drift. The proxy's per-thread CPU in the busy
windows shows where the page work ran.

    tests/.venv/bin/python tests/bench/isolation.py [--seconds 4] [--connections 8] [--pages-per-second 4] [--page-kb 420] [--rounds 5] [--workers N] [--no-build]
"""

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

from benchlib import (EVERYTHING_STDIO, UI_CAPS, HttpMcp, Wrk, conftest, cpu_table, http_session, print_cpu_table, process_cpu, summary, threads_cpu,
                      use_release)
from fake_llm import FakeLLM, page


def big_page(kb: int) -> str:
    html = page("BIG-PAGE", tool="echo")
    rows, i = [], 0
    size = len(html)
    while size < kb * 1024:
        row = f"<tr><td>row {i}</td><td>{i * 7 % 1000}</td><td>{i * 0.37:.2f}</td><td>sensor {i % 97}</td></tr>"
        rows.append(row)
        size += len(row)
        i += 1
    table = "<table><thead><tr><th>name</th><th>value</th><th>ratio</th><th>source</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    return html.replace('<pre id="out"></pre>', '<pre id="out"></pre>' + table)


class Regenerators:
    """`drivers` sessions calling _ui_regenerate round-robin over tools, together at `rate`/s."""

    def __init__(self, url: str, tools: list[str], rate: float, drivers: int):
        self.url, self.tools, self.rate, self.drivers = url, tools, rate, drivers
        self.stop = threading.Event()
        self.done = 0
        self.failed: list[str] = []
        self.ms: list[float] = []
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []

    def start(self) -> None:
        self.stop.clear()
        self.t0 = time.monotonic()
        self.threads = [threading.Thread(target=self.drive, args=(i,), daemon=True) for i in range(self.drivers)]
        for t in self.threads:
            t.start()

    def drive(self, i: int) -> None:
        c = HttpMcp(self.url, UI_CAPS, name=f"regen-{i}")
        mine = self.tools[i::self.drivers]  # distinct tools per driver: no two share a generation
        period = self.drivers / self.rate
        j = 0
        while not self.stop.is_set():
            due = self.t0 + i * period / self.drivers + j * period
            wait = due - time.monotonic()
            if wait > 0 and self.stop.wait(wait):
                break
            tool = mine[j % len(mine)]
            t = time.perf_counter()
            a = c.request("tools/call", {"name": "_ui_regenerate", "arguments": {"toolName": tool}})
            took = (time.perf_counter() - t) * 1000
            text = str(a.get("result", a))
            with self.lock:
                if "was regenerated (generated)" in text or "was regenerated (repaired)" in text:
                    self.done += 1
                    self.ms.append(took)
                else:
                    self.failed.append(text[:300])
            j += 1
        c.close()

    def finish(self) -> float:
        self.stop.set()
        for t in self.threads:
            t.join()
        return time.monotonic() - self.t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--pages-per-second", type=float, default=4)
    ap.add_argument("--drivers", type=int, default=2, help="sessions regenerating at once (the queue runs 2 generations at a time by default)")
    ap.add_argument("--page-kb", type=int, default=420)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workers", type=int, help="the service's --workers (default: its own default)")
    ap.add_argument("--no-build", action="store_true", help="use the release binary as it is")
    a = ap.parse_args()
    binary = use_release(not a.no_build)
    fake = FakeLLM()
    html = big_page(a.page_kb)
    fake.default = {"html": html}
    w = Wrk()
    print(f"{binary}; {os.cpu_count()} CPUs; wrk, {a.connections} connections, {a.seconds:g} s windows, tools/call echo on server-everything (stdio); "
          f"pages of {len(html) / 1024:.0f} KB from the fake LLM at {a.pages_per_second:g}/s by {a.drivers} sessions", flush=True)
    quiet, busy, cpu = [], [], []
    pages = {"done": 0, "secs": 0.0, "failed": [], "ms": []}
    # The drivers regenerate far more often than a host may (limits.llmCallsPerMinute, per
    # session): the bench lifts that limit rather than measure refusals.
    cfg_dir = tempfile.TemporaryDirectory(prefix="mcp-bench-")
    cfg = Path(cfg_dir.name) / "config.json"
    cfg.write_text(json.dumps({"limits": {"llmCallsPerMinute": 1000000}}))
    args = ["--config", str(cfg), "--upstream", EVERYTHING_STDIO, "--provider", "openai", "--llm-base-url", fake.base("openai"), "--log-level", "warn"]
    if a.workers:
        args += ["--workers", str(a.workers)]
    try:
        with conftest.proxy_http(args, name="bench-isolation", env={"OPENAI_API_KEY": "x"}) as (base, proc):
            url = base + "/mcp"
            pid = proc.p.pid
            c = HttpMcp(url, UI_CAPS)
            tools = [t["name"] for t in c.request("tools/list")["result"]["tools"] if not t["name"].startswith("_ui_")]
            first = c.request("resources/read", {"uri": "ui://echo"})["result"]["contents"][0]
            c.close()
            meta = first.get("_meta", {}).get("mcp-gen-ui", {})
            print(f"ui://echo as served: {len(first['text']) / 1024:.0f} KB, kind {meta.get('kind')}, fallback {meta.get('fallbackReason')}; "
                  f"{len(tools)} tools to regenerate", flush=True)
            sid = http_session(url, UI_CAPS)
            w.run(url, sid, a.connections, 1)
            for _ in range(a.rounds):
                quiet.append(w.run(url, sid, a.connections, a.seconds))
                regen = Regenerators(url, tools, a.pages_per_second, a.drivers)
                regen.start()
                time.sleep(0.5)  # let the first pages get going
                before, pb = threads_cpu(pid), process_cpu(pid)
                r = w.run(url, sid, a.connections, a.seconds)
                after, pa = threads_cpu(pid), process_cpu(pid)
                r["pages"] = regen.done
                pages["secs"] += regen.finish()
                pages["done"] += regen.done
                pages["failed"] += regen.failed
                pages["ms"] += regen.ms
                busy.append(r)
                cpu.append((cpu_table(pid, before, after, pb, pa, r["requests"], os.cpu_count() or 1), r))
    finally:
        w.close()
        fake.stop()
        cfg_dir.cleanup()
    print()
    print(f"{'window':10} {'calls/s':>9} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>8} {'bad':>5} {'pages':>6}")
    for q, b in zip(quiet, busy):
        for name, r in (("quiet", q), ("busy", b)):
            print(f"{name:10} {r['rps']:9.0f} {r['p50_ms']:8.3f} {r['p90_ms']:8.3f} {r['p99_ms']:8.3f} {r['max_ms']:8.3f} {r['bad'] + r['socket_errors']:5} "
                  f"{r.get('pages', 0):6}")
        print(f"{'':10} p99 busy/quiet this round: {b['p99_ms'] / q['p99_ms']:.2f}x")
    print(f"pages regenerated: {pages['done']} in {pages['secs']:.1f} s ({pages['done'] / max(pages['secs'], 1e-9):.1f}/s), "
          f"each took p50 {statistics.median(pages['ms']) if pages['ms'] else 0:.0f} ms end to end; failed: {len(pages['failed'])}")
    for f in pages["failed"][:3]:
        print(f"  failed: {f}")
    rows, last = cpu[-1]
    print()
    print("busy window, last round:")
    print_cpu_table(rows, last["requests"], last["duration_us"] / 1e6, os.cpu_count() or 1)
    # Medians over rounds: one noisy window (another process, a GC in node) moves a mean.
    q99 = statistics.median(r["p99_ms"] for r in quiet)
    b99 = statistics.median(r["p99_ms"] for r in busy)
    q50 = statistics.median(r["p50_ms"] for r in quiet)
    b50 = statistics.median(r["p50_ms"] for r in busy)
    summary("isolation.py (issue 11: proxied calls while large pages are post-processed)", [
        (f"tools/call p99 without page work (median of {a.rounds})", f"{q99:.2f} ms", "-", None),
        (f"tools/call p99 with {a.page_kb} KB pages post-processed", f"{b99:.2f} ms", "-", None),
        ("p99 with / without", f"{b99 / q99:.2f}x", "<= 1.5x", b99 / q99 <= 1.5),
        ("p50 with / without", f"{b50 / q50:.2f}x", "-", None),
        ("throughput with / without", f"{statistics.median(r['rps'] for r in busy) / statistics.median(r['rps'] for r in quiet):.2f}x", "-", None),
        ("pages post-processed per second (busy windows)", f"{pages['done'] / max(pages['secs'], 1e-9):.1f}", "-", None),
    ])


if __name__ == "__main__":
    main()

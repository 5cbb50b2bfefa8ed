"""Benchmark (prints figures, asserts nothing): what a long tool list costs (issues 24 and 44),
measured in one run against the release binary with an upstream of 5,000 small tools
(tests/e2e/hostile_upstream.py), which answers its tools/list in ONE answer (what most real
servers do) or in pages of 500 (`--page 500`):

- RSS at ready: once /readyz says the upstream's tools are listed (the catalog is known) and
  RSS has settled, before any host has listed them (the issue: the list held until a host
  lists it);
- RSS after the first host tools/list walk (every page) and after 20 of them, settled;
- the time one full walk takes;
- each upstream shape with the list served to hosts whole (limits.toolsPerPage 100000, what
  every host got before) and in pages of 1,000 (the default);
- the same service fronting one tool (the baseline for what the 5,000 cost).

Targets (issues 30 and 44): at most 40 MB of RSS once ready with 5,000 tools, from one upstream
answer and from pages alike, and 20 walks in pages adding at most 10% to it.

    tests/.venv/bin/python tests/bench/tool_lists.py [--tools 5000] [--walks 20] [--no-build]
"""

import argparse
import json
import shlex
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from benchlib import UI_CAPS, conftest, http_session, settled_rss_kb, summary, use_release

HOSTILE = Path(__file__).resolve().parents[1] / "e2e" / "hostile_upstream.py"
UPSTREAM_PAGE = 500  # the upstream's page when it pages (0: hostile_upstream.py answers in one)
HOST_PAGE = 1000  # limits.toolsPerPage's default
WHOLE = 100_000  # a toolsPerPage that serves the whole list in one answer


def walk(url: str, sid: str) -> tuple[int, int]:
    """One tools/list through every page; how many tools came, and their definitions' bytes."""
    count, size, cursor = 0, 0, None
    while True:
        params = {"cursor": cursor} if cursor else {}
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}).encode()
        req = urllib.request.Request(url, data=body, method="POST", headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Mcp-Session-Id": sid})
        with urllib.request.urlopen(req, timeout=60) as r:
            text = r.read().decode()
        if text.startswith("event:") or text.startswith("data:"):
            text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
        result = json.loads(text)["result"]
        count += len(result["tools"])
        size += sum(len(json.dumps(t)) for t in result["tools"])
        cursor = result.get("nextCursor")
        if not cursor:
            return count, size


def catalog_known(base: str, tools: int) -> None:
    """Waits until /readyz says ready with every upstream tool listed (proxy_http has waited for
    its 200: the upstream is initialized and its tools listed; this checks the count)."""
    def known():
        with urllib.request.urlopen(base + "/readyz", timeout=10) as r:
            return json.loads(r.read()).get("tools") == tools
    conftest.wait_for(known, 60, f"/readyz to report {tools} tools", every=0.1)


def measure(tools: int, upstream_page: int, per_page: int, walks: int, folder: Path) -> dict:
    cfg = folder / f"cfg-{per_page}.json"
    cfg.write_text(json.dumps({"limits": {"toolsPerPage": per_page}}))
    argv = [sys.executable, str(HOSTILE), "--tools", str(tools)]
    if upstream_page:
        argv += ["--page", str(upstream_page)]
    name = f"bench-lists-{upstream_page or 'one'}-{per_page}"
    with conftest.proxy_http(["--upstream", shlex.join(argv), "--config", str(cfg), "--log-level", "warn"], name=name) as (base, proc):
        pid = proc.p.pid
        catalog_known(base, tools)
        ready = settled_rss_kb(pid)  # before any host session or tools/list
        url = base + "/mcp"
        sid = http_session(url, UI_CAPS)
        start = time.perf_counter()
        got, list_bytes = walk(url, sid)
        spent = time.perf_counter() - start
        first = settled_rss_kb(pid)
        start = time.perf_counter()
        for _ in range(walks - 1):
            got, list_bytes = walk(url, sid)
        spent += time.perf_counter() - start
        # Settled, as at ready: what the walks left held, not what one was using.
        return {"ready": ready, "first": first, "after": settled_rss_kb(pid), "walk_ms": spent / walks * 1000, "tools": got,
                "list_bytes": list_bytes}


def mb(kb: float) -> str:
    return f"{kb / 1024:.1f} MB"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", type=int, default=5000)
    ap.add_argument("--walks", type=int, default=20)
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    use_release(not a.no_build)
    folder = Path(tempfile.mkdtemp(prefix="mcp-bench-lists-"))
    t0 = time.perf_counter()
    print("one tool (baseline) ...", flush=True)
    one = measure(1, 0, HOST_PAGE, a.walks, folder)
    runs = {}
    for up in (0, UPSTREAM_PAGE):
        for host in (HOST_PAGE, WHOLE):
            what = ("upstream: one answer" if not up else f"upstream: pages of {up}") + ", " + (
                "hosts: whole" if host == WHOLE else f"hosts: pages of {host:,}")
            print(f"{a.tools} tools, {what} ...", flush=True)
            runs[up, host] = measure(a.tools, up, host, a.walks, folder)
    print(f"({time.perf_counter() - t0:.0f} s)")

    print()
    print(f"{'upstream answers':18} {'hosts get':14} {'at ready':>9} {'1st walk':>9} {f'{a.walks} walks':>9} {'growth':>14} {'one walk':>9}")
    for (up, host), r in [((0, HOST_PAGE), one), *runs.items()]:
        up_s = "one" if not up else f"pages of {up}"
        if r is one:
            up_s += " (1 tool)"
        host_s = "whole" if host == WHOLE else f"pages of {host:,}"
        g = r["after"] - r["ready"]
        print(f"{up_s:18} {host_s:14} {mb(r['ready']):>9} {mb(r['first']):>9} {mb(r['after']):>9} "
              f"{g / 1024:+6.1f} MB {g / r['ready']:+4.0%} {r['walk_ms']:7.1f} ms")

    defs = runs[0, HOST_PAGE]["list_bytes"] / 1e6
    rows = [("RSS at ready, 1 tool", mb(one["ready"]), "baseline", None)]
    for up, label in ((0, "one upstream answer"), (UPSTREAM_PAGE, f"upstream pages of {UPSTREAM_PAGE}")):
        r = runs[up, HOST_PAGE]
        rows.append((f"RSS at ready, {a.tools} tools from {label} ({defs:.1f} MB of definitions)",
                     f"{mb(r['ready'])} (+{(r['ready'] - one['ready']) / 1024:.1f} MB)", "<= 40 MB", r["ready"] / 1024 <= 40))
    for up, label in ((0, "one upstream answer"), (UPSTREAM_PAGE, f"upstream pages of {UPSTREAM_PAGE}")):
        r = runs[up, HOST_PAGE]
        rows.append((f"RSS after the first walk, {label}", f"{mb(r['first'])} ({(r['first'] - r['ready']) / 1024:+.1f} MB)", "-", None))
    for up, label in ((0, "one upstream answer"), (UPSTREAM_PAGE, f"upstream pages of {UPSTREAM_PAGE}")):
        r = runs[up, HOST_PAGE]
        growth = (r["after"] - r["ready"]) / r["ready"]
        rows.append((f"growth over ready after {a.walks} walks in pages of 1,000, {label}",
                     f"{(r['after'] - r['ready']) / 1024:+.1f} MB ({growth:+.0%})", "<= 10%", growth <= 0.10))
    for up, label in ((0, "one upstream answer"), (UPSTREAM_PAGE, f"upstream pages of {UPSTREAM_PAGE}")):
        whole, paged = runs[up, WHOLE], runs[up, HOST_PAGE]
        rows.append((f"RSS after {a.walks} walks served whole, {label}", mb(whole["after"]), "baseline", None))
        rows.append((f"RSS after {a.walks} walks in pages of 1,000, {label}",
                     f"{mb(paged['after'])} ({paged['after'] / whole['after']:.2f}x)", "-", None))
    for up, label in ((0, "one upstream answer"), (UPSTREAM_PAGE, f"upstream pages of {UPSTREAM_PAGE}")):
        whole, paged = runs[up, WHOLE], runs[up, HOST_PAGE]
        rows.append((f"one walk served whole, {label}", f"{whole['walk_ms']:.1f} ms ({whole['tools']} tools)", "baseline", None))
        rows.append((f"one walk in pages of 1,000, {label}", f"{paged['walk_ms']:.1f} ms ({paged['walk_ms'] / whole['walk_ms']:.2f}x)", "-", None))
    summary("a long tool list", rows)


if __name__ == "__main__":
    main()

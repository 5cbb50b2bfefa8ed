"""Benchmark (prints figures, asserts nothing): what a long tool list costs (issue 24, item 1),
measured in one run against the release binary with an upstream of 5,000 small tools
(tests/e2e/hostile_upstream.py):

- RSS at ready and after 20 host tools/list walks (every page), with the list served whole
  (limits.toolsPerPage 100000, what every host got before) and in pages of 1,000 (the default);
- the time one full walk takes in each case;
- the same service fronting one tool (the baseline for what the 5,000 cost).

Targets (issue 30): at most 40 MB of RSS once ready with 5,000 tools, and 20 walks in pages
adding at most 10% to it.

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

from benchlib import UI_CAPS, conftest, http_session, rss_kb, summary, use_release

HOSTILE = Path(__file__).resolve().parents[1] / "e2e" / "hostile_upstream.py"


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


def measure(tools: int, per_page: int, walks: int, folder: Path) -> dict:
    cfg = folder / f"cfg-{per_page}.json"
    cfg.write_text(json.dumps({"limits": {"toolsPerPage": per_page}}))
    up = shlex.join([sys.executable, str(HOSTILE), "--tools", str(tools), "--page", "500"])
    with conftest.proxy_http(["--upstream", up, "--config", str(cfg), "--log-level", "warn"], name=f"bench-lists-{per_page}") as (base, proc):
        url = base + "/mcp"
        sid = http_session(url, UI_CAPS)
        time.sleep(1)
        ready = rss_kb(proc.p.pid)
        start = time.perf_counter()
        for _ in range(walks):
            got, list_bytes = walk(url, sid)
        per_walk = (time.perf_counter() - start) / walks
        time.sleep(1)  # settled, as at ready: what the walks left held, not what one was using
        return {"ready": ready, "after": rss_kb(proc.p.pid), "walk_ms": per_walk * 1000, "tools": got, "list_bytes": list_bytes}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", type=int, default=5000)
    ap.add_argument("--walks", type=int, default=20)
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    use_release(not a.no_build)
    folder = Path(tempfile.mkdtemp(prefix="mcp-bench-lists-"))
    print("one tool (baseline) ...", flush=True)
    one = measure(1, 1000, a.walks, folder)
    print("the whole list in one answer ...", flush=True)
    whole = measure(a.tools, 100_000, a.walks, folder)
    print("pages of 1,000 ...", flush=True)
    paged = measure(a.tools, 1000, a.walks, folder)
    growth = (paged['after'] - paged['ready']) / paged['ready']
    rows = [
        ("RSS at ready, 1 tool", f"{one['ready'] / 1024:.1f} MB", "baseline", None),
        (f"RSS at ready, {a.tools} tools ({paged['list_bytes'] / 1e6:.1f} MB of definitions)", f"{paged['ready'] / 1024:.1f} MB "
         f"(+{(paged['ready'] - one['ready']) / 1024:.1f} MB)", "<= 40 MB", paged['ready'] / 1024 <= 40),
        (f"RSS after {a.walks} walks, one answer", f"{whole['after'] / 1024:.1f} MB", "baseline", None),
        (f"RSS after {a.walks} walks, pages of 1,000", f"{paged['after'] / 1024:.1f} MB ({paged['after'] / whole['after']:.2f}x)", "-", None),
        ("growth over ready, one answer", f"{(whole['after'] - whole['ready']) / 1024:.1f} MB", "baseline", None),
        ("growth over ready, pages", f"{(paged['after'] - paged['ready']) / 1024:.1f} MB ({growth:.0%})", "<= 10%", growth <= 0.10),
        ("one walk, one answer", f"{whole['walk_ms']:.1f} ms ({whole['tools']} tools)", "baseline", None),
        ("one walk, pages of 1,000", f"{paged['walk_ms']:.1f} ms ({paged['walk_ms'] / whole['walk_ms']:.2f}x)", "-", None),
    ]
    summary("a long tool list", rows)


if __name__ == "__main__":
    main()

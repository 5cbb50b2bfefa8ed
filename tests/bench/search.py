"""Benchmark (prints figures, asserts nothing): issue 32's tool search, in one run:

- the bytes of tools/list for a UI host, the whole fleet (/mcp) against a search profile
  (/mcp/all: the four pinned weather tools and the three search tools), with five real servers
  and a generated one making the fleet 300 tools (from /readyz, which serializes each list);
- the ranking's top-3 hit rate on the plain-language tasks of tests/e2e/search_tasks.json,
  through search_tools on that fleet: first the 30 held-out tasks (written after the ranking's
  synonyms, none sharing a content word with its tools: the ranking's own figure, which
  test_profiles.py gives a floor), then the 31 of the tuning set (the synonyms were written
  with them: a figure of fit, not of search) and the 30 of those that share a word, with
  two kinds of noise: synthetic tools whose descriptions no query matches (padding), and the same
  count with 83 of them swapped for real servers' tools (GitHub, Slack, Git, Puppeteer, Google
  Maps, SQLite, Postgres, Brave Search, Fetch, Redis and a few more: search_real_tools.json, served
  by the same generated server), whose descriptions a query can match;
- search latency in-process at 5,000 tools (actors/examples/search_bench.rs, release build):
  p50 and p99 of 2,000 queries, against a scan of every tool for the query's first word in the
  same process.

    tests/.venv/bin/python tests/bench/search.py [--tools 300] [--no-build]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

from benchlib import ROOT, conftest, summary, use_release

sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from test_profiles import five_servers  # noqa: E402

HOSTILE = ROOT / "tests" / "e2e" / "hostile_upstream.py"
TASKS = json.loads((ROOT / "tests" / "e2e" / "search_tasks.json").read_text())["tasks"]
HELD_OUT = [t for t in TASKS if t.get("held_out")]
TUNING = [t for t in TASKS if not t.get("held_out")]
REAL = Path(__file__).with_name("search_real_tools.json")
REAL_COUNT = len(json.loads(REAL.read_text())["tools"])


def post(url: str, body: dict, sid: str | None = None) -> tuple[dict, str | None]:
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if sid:
        h["Mcp-Session-Id"] = sid
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers=h)
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read().decode() or "null"), r.headers.get("Mcp-Session-Id")


def fleet(a, folder: Path, real: bool) -> dict:
    """The five servers and a generated one making the fleet a.tools tools: synthetic tools only,
    or (real) the real servers' tools of REAL and synthetic ones for the rest."""
    folder.mkdir()
    servers = five_servers(folder)
    cfg = json.loads(servers.read_text())
    extra = a.tools - 45 - (REAL_COUNT if real else 0)
    args = [str(HOSTILE), "--tools", str(extra), "--pad", "160"] + (["--defs", str(REAL)] if real else [])
    cfg["mcpServers"]["generated"] = {"command": sys.executable, "args": args}
    servers.write_text(json.dumps(cfg))
    config = folder / "config.json"
    config.write_text(json.dumps({"profiles": {"all": {"tools": ["*"], "discovery": "search", "pin": ["weather__*"]}}}))
    with conftest.proxy_http(["--servers-file", str(servers), "--config", str(config), "--no-auth", "--log-level", "warn"], name="bench-search") as (base, _):
        state = json.loads(urllib.request.urlopen(base + "/readyz", timeout=30).read())
        sizes = {p["path"]: p for p in state["profiles"]}
        url = base + "/mcp/all"
        _, sid = post(url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
        hit, misses = set(), []
        for i, t in enumerate(TASKS):
            ans, _ = post(url, {"jsonrpc": "2.0", "id": i + 2, "method": "tools/call",
                                "params": {"name": "search_tools", "arguments": {"query": t["task"], "limit": 3}}}, sid)
            names = [x["name"] for x in ans["result"]["structuredContent"]["tools"]]
            if any(n in t["tools"] for n in names):
                hit.add(t["task"])
            else:
                misses.append(f"{'(held out) ' if t.get('held_out') else ''}{t['task']!r} -> {names}")
        return {"sizes": sizes, "hit": hit, "misses": misses}


def in_process(tools: int, build: bool) -> dict:
    """The in-process bench, built first (dist) unless --no-build, from CARGO_TARGET_DIR."""
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    if build:
        subprocess.run(["cargo", "build", "--profile", "dist", "-q", "-p", "mcp-gen-ui-actors", "--example", "search_bench"], cwd=ROOT, check=True)
    out = subprocess.run([str(target / "dist" / "examples" / "search_bench"), str(tools)], capture_output=True, text=True, check=True).stdout
    print(out, flush=True)
    return json.loads(next(line[7:] for line in out.splitlines() if line.startswith("RESULT ")))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", type=int, default=300)
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    use_release(not a.no_build)
    folder = Path(tempfile.mkdtemp(prefix="mcp-bench-search-"))
    runs = {}
    for kind, real in (("synthetic noise", False), ("real-description noise", True)):
        runs[kind] = fleet(a, folder / kind.split()[0], real)
        for m in runs[kind]["misses"]:
            print(f"missed ({kind}):", m)
    r = in_process(5000, not a.no_build)
    f = runs["synthetic noise"]
    full, search = f["sizes"]["/mcp"], f["sizes"]["/mcp/all"]
    ratio = search["listBytes"] / full["listBytes"]

    def rate(tasks, run):
        n = sum(t["task"] in run["hit"] for t in tasks)
        return n / len(tasks), f"{n}/{len(tasks)} ({n / len(tasks):.0%})"

    shared = [t for t in TUNING if not t.get("shares_no_word")]
    print(f"noise: {a.tools - 45} synthetic tools / {a.tools - 45 - REAL_COUNT} synthetic and {REAL_COUNT} real servers' tools")
    rows = [
        (f"tools/list, whole fleet ({full['tools']} tools)", f"{full['listBytes']:,} bytes", "baseline", None),
        (f"tools/list, search profile ({search['tools']} tools)", f"{search['listBytes']:,} bytes ({ratio:.1%})", "< 10%", ratio < 0.10),
    ]
    for label, tasks, target in ((f"the {len(HELD_OUT)} held-out tasks (the headline)", HELD_OUT, None),
                                 (f"the {len(TUNING)} tasks of the tuning set (the synonyms' own)", TUNING, None),
                                 (f"the {len(shared)} of them that share a word with their tools", shared, 0.90)):
        (x, xs), (y, ys) = rate(tasks, runs["synthetic noise"]), rate(tasks, runs["real-description noise"])
        rows.append((f"top-3 hit rate, {label}, synthetic / real-description noise", f"{xs} / {ys}",
                     f">= {target:.0%}" if target else "-", None if target is None else min(x, y) >= target))
    rows += [
        ("search p50 at 5,000 tools, in-process", f"{r['p50_ms']:.3f} ms", "-", None),
        ("search p99 at 5,000 tools, in-process",
         f"{r['p99_ms']:.3f} ms (a scan of every tool for the query's first word: {r['scan_p99_ms']:.3f} ms)", "< 1 ms", r["p99_ms"] < 1.0),
        ("index build at 5,000 tools (once per catalog change)", f"{r['build_ms']:.0f} ms", "-", None),
    ]
    summary("search.py (issue 32: a search profile's list against the whole fleet, the ranking, search latency)", rows)


if __name__ == "__main__":
    main()

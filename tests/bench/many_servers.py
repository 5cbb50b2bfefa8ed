"""Benchmark (prints figures, asserts nothing): several servers behind one endpoint (issue 19),
measured in one run with wrk on loopback against the release binary:

- tools/list and a tools/call (echo) per second through one server behind --upstream, and
  through a servers file of 1 and of 5 servers (server-everything over stdio, each its own
  process), as ratios to the one server behind --upstream;
- RSS of the proxy with 1, 2, 5 and 10 servers (children not counted), and what each added
  server costs.

The three cases run in interleaved rounds (bare, 1, 5, bare, 1, 5, ...) and the medians are
compared, so that drift over the run hits every case alike.

    tests/.venv/bin/python tests/bench/many_servers.py [--seconds 5] [--connections 8] [--rounds 3] [--no-build]
"""

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from benchlib import UI_CAPS, Wrk, conftest, http_session, rss_kb, summary, use_release

EVERYTHING = [conftest.NODE, str(conftest.EVERYTHING), "stdio"]


def servers_file(n: int, folder: Path) -> Path:
    p = folder / f"servers-{n}.json"
    p.write_text(json.dumps({"mcpServers": {f"s{i}": {"command": EVERYTHING[0], "args": EVERYTHING[1:]} for i in range(n)}}))
    return p


def measure(w: Wrk, args: list[str], name: str, echo: str, a) -> dict:
    with conftest.proxy_http([*args, "--log-level", "warn"], name=name) as (base, proc):
        url = base + "/mcp"
        sid = http_session(url, UI_CAPS)
        time.sleep(1)
        out = {"rss_kb": rss_kb(proc.p.pid)}
        for label, method, params in [("list", "tools/list", {}), ("call", "tools/call", {"name": echo, "arguments": {"message": "hello"}})]:
            w.run(url, sid, a.connections, 1, method, params)  # warm-up
            r = w.run(url, sid, a.connections, a.seconds, method, params)
            if r["bad"] or r["socket_errors"]:
                print(f"  {name} {label}: {r['bad']} bad answers, {r['socket_errors']} socket errors", flush=True)
            out[label] = r["rps"]
        return out


def idle_rss(n: int, folder: Path) -> int:
    with conftest.proxy_http(["--servers-file", str(servers_file(n, folder)), "--log-level", "warn"], name=f"bench-many-rss-{n}") as (_, proc):
        time.sleep(2)
        return rss_kb(proc.p.pid)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    use_release(not a.no_build)
    w = Wrk()
    folder = Path(tempfile.mkdtemp(prefix="mcp-bench-many-"))
    cases = {"bare": (["--upstream", " ".join(EVERYTHING)], "echo"),
             1: (["--servers-file", str(servers_file(1, folder))], "s0__echo"),
             5: (["--servers-file", str(servers_file(5, folder))], "s0__echo")}
    rounds: dict = {k: [] for k in cases}
    try:
        for i in range(a.rounds):
            for k, (args, echo) in cases.items():
                print(f"round {i + 1}: {k} ...", flush=True)
                rounds[k].append(measure(w, args, f"bench-many-{k}", echo, a))
        print("idle RSS by number of servers ...", flush=True)
        rss = {n: idle_rss(n, folder) for n in (1, 2, 5, 10)}
    finally:
        w.close()
    med = {k: {label: statistics.median(r[label] for r in rs) for label in ("list", "call")} for k, rs in rounds.items()}
    bare, runs = med["bare"], {1: med[1], 5: med[5]}
    rows = []
    for label in ("list", "call"):
        rows.append((f"{label}/s, 1 server behind --upstream", f"{bare[label]:,.0f}", "baseline", None))
        for n, r in runs.items():
            rows.append((f"{label}/s through {n} servers (servers file)", f"{r[label]:,.0f} ({r[label] / bare[label]:.2f}x)", "-", None))
    for n, kb in rss.items():
        rows.append((f"idle RSS with {n} servers", f"{kb / 1024:.1f} MB", "-", None))
    per = (rss[10] - rss[1]) / 9
    rows.append(("RSS per added server (1 -> 10)", f"{per / 1024:.2f} MB", "-", None))
    summary("many servers behind one endpoint", rows)


if __name__ == "__main__":
    main()

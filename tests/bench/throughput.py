"""Benchmark (prints figures, asserts nothing): issue 11's throughput, CPU and memory figures,
measured in one run on loopback with one client (wrk, 8 connections, tools/call echo into one
Streamable HTTP session) against one upstream (server-everything over stdio):

- throughput through the proxy against supergateway 4 (stateful Streamable HTTP) wrapping the
  same upstream, and server-everything's own Streamable HTTP as a reference;
- throughput with 1 HTTP worker and with N (this script's `--workers`, default one per CPU;
  the service's own default is half the CPUs);
- CPU per proxy thread and per call over the load window (/proc/<pid>/task/*/stat), so the
  thread every call passes through and its cost per call show. A stdio upstream's answers are
  read on one HTTP worker (issue 53), so the busiest worker is reported apart: with N workers
  it carries its own connections and every answer;
- idle RSS of the proxy on `--demo`.

    tests/.venv/bin/python tests/bench/throughput.py [--seconds 5] [--connections 8] [--workers N] [--rounds 2] [--no-build]
"""

import argparse
import os
import time

from benchlib import (EVERYTHING_STDIO, NODE_BIN, TICK_US, UI_CAPS, WORKER, Wrk, busiest_single, children_cpu, conftest, cpu_table, has_flag, http_session,
                      print_cpu_table, process_cpu, rss_kb, summary, threads_cpu, use_release)


def load(w: Wrk, url: str, sid: str, a) -> dict:
    w.run(url, sid, a.connections, 1)  # warm-up
    return w.run(url, sid, a.connections, a.seconds)


def proxied(w: Wrk, a, workers: int | None) -> dict:
    args = ["--upstream", EVERYTHING_STDIO, "--log-level", "warn"]
    if workers is not None:
        args += ["--workers", str(workers)]
    with conftest.proxy_http(args, name=f"bench-throughput-w{workers}") as (base, proc):
        url = base + "/mcp"
        sid = http_session(url, UI_CAPS)
        w.run(url, sid, a.connections, 1)
        pid = proc.p.pid
        before, pb, cb = threads_cpu(pid), process_cpu(pid), children_cpu(pid)
        r = w.run(url, sid, a.connections, a.seconds)
        after, pa, ca = threads_cpu(pid), process_cpu(pid), children_cpu(pid)
        r["rss_kb"] = rss_kb(pid)
        r["cpu_rows"] = cpu_table(pid, before, after, pb, pa, r["requests"], workers or os.cpu_count() or 1)
        r["proc_us_per_call"] = (pa - pb) * TICK_US / max(r["requests"], 1)
        r["upstream_us_per_call"] = (ca - cb) * TICK_US / max(r["requests"], 1)
    return r


def supergateway(w: Wrk, a) -> dict:
    port = conftest.free_port()
    p = conftest.Proc("bench-supergateway", [str(NODE_BIN / "supergateway"), "--stdio", EVERYTHING_STDIO, "--outputTransport", "streamableHttp",
                                             "--stateful", "--port", str(port), "--logLevel", "none"])
    try:
        conftest.wait_port(port)
        url = f"http://127.0.0.1:{port}/mcp"
        return load(w, url, http_session(url), a)
    finally:
        p.stop()


def everything_http(w: Wrk, a) -> dict:
    with conftest.everything_http("streamableHttp") as url:
        return load(w, url, http_session(url), a)


def idle_rss() -> int:
    with conftest.proxy_http(["--demo", "--log-level", "warn"], name="bench-idle") as (_, proc):
        time.sleep(2)
        return rss_kb(proc.p.pid)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="N for the 1-vs-N comparison (default: CPUs)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--no-build", action="store_true", help="use the release binary as it is")
    a = ap.parse_args()
    binary = use_release(not a.no_build)
    workers_flag = has_flag("--workers")
    if not workers_flag:
        print("note: this build has no --workers flag: the 1-vs-N figure is skipped (the proxy runs its default)")
    w = Wrk()
    print(f"{binary}; {os.cpu_count()} CPUs; wrk, {a.connections} connections, {a.seconds:g} s windows, tools/call echo on server-everything (stdio)", flush=True)
    runs = {"proxy N": [], "proxy 1": [], "supergateway": [], "everything": []}
    try:
        rss = idle_rss()
        for _ in range(a.rounds):
            runs["proxy N"].append(proxied(w, a, a.workers if workers_flag else None))
            if workers_flag:
                runs["proxy 1"].append(proxied(w, a, 1))
            runs["supergateway"].append(supergateway(w, a))
            runs["everything"].append(everything_http(w, a))
    finally:
        w.close()
    names = {"proxy N": f"mcp-gen-ui, {a.workers} workers", "proxy 1": "mcp-gen-ui, 1 worker", "supergateway": "supergateway 4 (stateful)",
             "everything": "server-everything's own HTTP"}
    print()
    print(f"{'':32} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'bad':>5}")
    mean = {}
    for k, rs in runs.items():
        for r in rs:
            print(f"{names[k]:32} {r['rps']:9.0f} {r['p50_ms']:8.3f} {r['p99_ms']:8.3f} {r['bad'] + r['socket_errors']:5}")
        if rs:
            mean[k] = sum(r["rps"] for r in rs) / len(rs)
    for k, n in (("proxy N", a.workers), ("proxy 1", 1)):
        if runs[k]:
            last = runs[k][-1]
            print()
            print(f"{names[k]}:")
            print_cpu_table(last["cpu_rows"], last["requests"], last["duration_us"] / 1e6, n)
            print(f"whole proxy process: {last['proc_us_per_call']:.1f} us/call; the upstream (node, one thread): {last['upstream_us_per_call']:.1f} us/call; "
                  f"RSS after the window {last['rss_kb'] / 1024:.1f} MB")
    last = runs["proxy N"][-1]
    worst = busiest_single(last["cpu_rows"])
    busiest_worker = max((r for r in last["cpu_rows"] if r[2] == WORKER), key=lambda r: r[4], default=None)
    rows = [
        ("proxy throughput, calls/s", f"{mean['proxy N']:.0f}", "-", None),
        ("supergateway 4 throughput, calls/s", f"{mean['supergateway']:.0f}", "-", None),
        ("proxy / supergateway", f"{mean['proxy N'] / mean['supergateway']:.2f}x", ">= 6x", mean["proxy N"] / mean["supergateway"] >= 6),
        ("proxy / server-everything's own HTTP", f"{mean['proxy N'] / mean['everything']:.2f}x", "-", None),
    ]
    if workers_flag:
        rows.append((f"throughput {a.workers} workers / 1 worker", f"{mean['proxy N']:.0f} / {mean['proxy 1']:.0f} = {mean['proxy N'] / mean['proxy 1']:.2f}x", "-", None))
    rows += [
        (f"busiest thread outside the HTTP workers ({worst[1]}, {worst[2]})", f"{worst[4]:.2f} us/call", "<= 10 us/call", worst[4] <= 10),
        *([(f"busiest HTTP worker of {a.workers} (the upstream's answers are read on one)", f"{busiest_worker[4]:.2f} us/call", "-", None)]
          if busiest_worker else []),
        ("HTTP workers together", f"{sum(r[3] for r in last['cpu_rows'] if r[2] == WORKER) / max(last['requests'], 1):.2f} us/call", "-", None),
        ("whole proxy process / upstream process", f"{last['proc_us_per_call']:.1f} / {last['upstream_us_per_call']:.1f} us/call", "-", None),
        ("idle RSS on --demo", f"{rss / 1024:.1f} MB", "<= 15 MB", rss / 1024 <= 15),
    ]
    summary("throughput.py (issue 11: throughput vs supergateway, no thread is the ceiling, 1 vs N workers, idle RSS)", rows)


if __name__ == "__main__":
    main()

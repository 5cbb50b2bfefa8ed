"""Benchmark (prints figures, asserts nothing): issue 22's cost of tracing, in one run on
loopback (wrk, 8 connections, tools/call echo into one Streamable HTTP session, server-everything
over stdio behind the proxy): throughput with tracing off, on with every trace kept (sampler
ratio 1.0: three spans per call, exported), and on at ratio 0.01. The collector is a local
OTLP/HTTP endpoint that takes each export and discards it, so what is measured is the proxy's
own cost; spans it could not queue are read from mcp_gen_ui_trace_spans_dropped_total.

    tests/.venv/bin/python tests/bench/tracing.py [--seconds 5] [--connections 8] [--rounds 3] [--no-build]
"""

import argparse
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from benchlib import EVERYTHING_STDIO, UI_CAPS, Wrk, conftest, http_session, rss_kb, summary, use_release


class Sink:
    """Takes OTLP/HTTP exports, counts their bytes, answers 200."""

    def __init__(self):
        self.bytes = 0
        sink = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("content-length", 0))
                sink.bytes += len(self.rfile.read(n))
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def run(w: Wrk, a, name: str, env: dict) -> dict:
    args = ["--upstream", EVERYTHING_STDIO, "--log-level", "warn"]
    with conftest.proxy_http(args, name=f"bench-tracing-{name}", env=env) as (base, proc):
        url = base + "/mcp"
        sid = http_session(url, UI_CAPS)
        w.run(url, sid, a.connections, 1)  # warm-up
        r = w.run(url, sid, a.connections, a.seconds)
        r["rss_kb"] = rss_kb(proc.p.pid)
        samples = conftest.scrape(base)
        r["dropped"] = sum(v for (n, _), v in samples.items() if n == "mcp_gen_ui_trace_spans_dropped_total")
    return r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-build", action="store_true", help="use the release binary as it is")
    a = ap.parse_args()
    binary = use_release(not a.no_build)
    sink = Sink()
    base_env = {"OTEL_EXPORTER_OTLP_ENDPOINT": sink.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "1000"}
    modes = {
        "off": {},
        "on, ratio 1.0": {**base_env, "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1.0"},
        "on, ratio 0.01": {**base_env, "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.01"},
    }
    w = Wrk()
    print(f"{binary}; {os.cpu_count()} CPUs; wrk, {a.connections} connections, {a.seconds:g} s windows, {a.rounds} rounds", flush=True)
    runs = {k: [] for k in modes}
    try:
        for _ in range(a.rounds):  # interleaved, so drift hits every mode alike
            for k, env in modes.items():
                runs[k].append(run(w, a, k.split(",")[0] + k.split(" ")[-1], env))
    finally:
        w.close()
        sink.stop()
    print()
    print(f"{'':18} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'RSS MB':>7} {'dropped':>8}")
    mean = {}
    for k, rs in runs.items():
        for r in rs:
            print(f"{k:18} {r['rps']:9.0f} {r['p50_ms']:8.3f} {r['p99_ms']:8.3f} {r['rss_kb'] / 1024:7.1f} {r['dropped']:8.0f}")
        mean[k] = sum(r["rps"] for r in rs) / len(rs)
    print(f"\nexported to the sink: {sink.bytes / 1e6:.1f} MB")
    rows = [
        ("tracing off, calls/s", f"{mean['off']:.0f}", "-", None),
        ("on at ratio 1.0 / off", f"{mean['on, ratio 1.0'] / mean['off']:.2f}x", "-", None),
        ("on at ratio 0.01 / off", f"{mean['on, ratio 0.01'] / mean['off']:.2f}x", "-", None),
    ]
    summary("tracing.py (issue 22: the proxy's throughput with tracing off, on, and sampled at 1%)", rows)


if __name__ == "__main__":
    main()

"""Benchmark (prints figures, asserts nothing): tools/call throughput and latency through the
proxy versus directly against the same upstream, measured in one run.

The upstream is server-everything in streamableHttp mode; the proxy wraps that same process over
Streamable HTTP, so the only difference between the two is the proxy hop. The client is the
Rust load client `actors/examples/mcp_load.rs` (built here in release mode), fast enough that
the servers, not the client, are measured. Runs alternate direct and proxied to spread drift.

    tests/.venv/bin/python tests/bench/proxy_overhead.py [--calls 4000] [--concurrency 8] [--rounds 2]
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from conftest import everything_http, proxy_http  # noqa: E402

LOAD = ROOT / "target" / "dist" / "examples" / "mcp_load"


def run(url: str, calls: int, concurrency: int) -> tuple[float, float, float]:
    out = subprocess.run([str(LOAD), url, str(calls), str(concurrency)], capture_output=True, text=True, check=True).stdout.split()
    return float(out[1]), float(out[2]), float(out[3])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=4000)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--profile", "dist", "-q", "-p", "mcp-gen-ui-actors", "--example", "mcp_load"], cwd=ROOT, check=True)
    results = {"direct": [], "proxied": []}
    with everything_http("streamableHttp") as up_url:
        with proxy_http(["--upstream-url", up_url, "--log-level", "warn"], name="proxy-bench", env={"PATH": os.environ["PATH"]}) as (base, _):
            for _ in range(a.rounds):
                results["direct"].append(run(up_url, a.calls, a.concurrency))
                results["proxied"].append(run(base + "/mcp", a.calls, a.concurrency))
    print(f"tools/call (server-everything get-sum), {a.calls} calls x {a.rounds} rounds, concurrency {a.concurrency}, Rust load client")
    print(f"{'':10} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8}")
    mean = {}
    for name, rs in results.items():
        for r in rs:
            print(f"{name:10} {r[0]:9.0f} {r[1]:8.3f} {r[2]:8.3f}")
        mean[name] = [sum(x) / len(rs) for x in zip(*rs)]
    d, p = mean["direct"], mean["proxied"]
    print(f"ratio proxied/direct (means): throughput {p[0] / d[0]:.2f}x, p50 {p[1] / d[1]:.2f}x, p99 {p[2] / d[2]:.2f}x; added p50 {p[1] - d[1]:.3f} ms")


if __name__ == "__main__":
    main()

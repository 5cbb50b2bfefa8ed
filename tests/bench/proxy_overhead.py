"""Benchmark (prints figures, asserts nothing): tools/call throughput and latency through the
proxy versus directly against the same upstream, measured in one run.

The upstream is server-everything in streamableHttp mode; the proxy wraps that same process over
Streamable HTTP, so the only difference between the two runs is the proxy hop. Both sides use the
same client (the Python mcp SDK) and the same concurrency.

    tests/.venv/bin/python tests/bench/proxy_overhead.py [--calls 2000] [--concurrency 8]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from conftest import everything_http, proxy_http  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402


async def measure(url: str, calls: int, concurrency: int) -> dict:
    latencies: list[float] = []
    async with streamable_http_client(url) as streams:
        async with ClientSession(streams[0], streams[1]) as s:
            await s.initialize()
            for _ in range(50):  # warm-up
                await s.call_tool("get-sum", {"a": 1, "b": 2})
            per_worker = calls // concurrency

            async def worker():
                for i in range(per_worker):
                    t0 = time.perf_counter()
                    res = await s.call_tool("get-sum", {"a": i, "b": 2})
                    latencies.append(time.perf_counter() - t0)
                    assert not res.is_error

            start = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for _ in range(concurrency):
                    tg.start_soon(worker)
            elapsed = time.perf_counter() - start
    latencies.sort()
    q = statistics.quantiles(latencies, n=100)
    return {"rps": len(latencies) / elapsed, "p50": q[49] * 1000, "p99": q[98] * 1000, "n": len(latencies)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=8)
    a = ap.parse_args()
    with everything_http("streamableHttp") as up_url:
        with proxy_http(["--upstream-url", up_url, "--log-level", "warn"], name="proxy-bench") as (base, _):
            direct = anyio.run(measure, up_url, a.calls, a.concurrency)
            proxied = anyio.run(measure, base + "/mcp", a.calls, a.concurrency)
            direct2 = anyio.run(measure, up_url, a.calls, a.concurrency)
    print(f"tools/call, {a.calls} calls, concurrency {a.concurrency}, Python mcp SDK client, server-everything upstream")
    print(f"{'':10} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8}")
    for name, r in [("direct", direct), ("proxied", proxied), ("direct", direct2)]:
        print(f"{name:10} {r['rps']:9.0f} {r['p50']:8.2f} {r['p99']:8.2f}")
    base_rps = (direct["rps"] + direct2["rps"]) / 2
    base_p50 = (direct["p50"] + direct2["p50"]) / 2
    base_p99 = (direct["p99"] + direct2["p99"]) / 2
    print(f"ratio proxied/direct: throughput {proxied['rps'] / base_rps:.2f}x, p50 {proxied['p50'] / base_p50:.2f}x, p99 {proxied['p99'] / base_p99:.2f}x")


if __name__ == "__main__":
    main()

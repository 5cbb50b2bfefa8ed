"""Benchmark (prints figures, asserts nothing): latency of a cache-hit `resources/read` of a
ui:// page over Streamable HTTP, against `ping` through the same proxy and session as the
baseline (same HTTP path, no page).

    tests/.venv/bin/python tests/bench/ui_read_latency.py [--reads 500]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from conftest import proxy_http  # noqa: E402
from fake_llm import FakeLLM, page  # noqa: E402
from mcpclient import session  # noqa: E402


async def measure(base: str, reads: int) -> tuple[list[float], list[float], int]:
    async with session("mcp", base) as s:
        first = await s.read_resource("ui://get_forecast")  # cold: generated once
        size = len(first.contents[0].text)
        pings, hits = [], []
        for _ in range(reads):
            t = time.perf_counter()
            await s.send_ping()
            pings.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            await s.read_resource("ui://get_forecast")
            hits.append((time.perf_counter() - t) * 1000)
        return pings, hits, size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reads", type=int, default=500)
    a = ap.parse_args()
    fake = FakeLLM()
    fake.default = {"html": page("BENCH")}
    try:
        with proxy_http(["--demo", "--provider", "openai", "--llm-base-url", fake.base("openai"), "--log-level", "warn"], name="proxy-bench-read", env={"OPENAI_API_KEY": "x"}) as (base, _):
            pings, hits, size = anyio.run(measure, base, a.reads)
    finally:
        fake.stop()
    q = lambda v, p: statistics.quantiles(v, n=100)[p - 1]  # noqa: E731
    print(f"cache-hit resources/read of a {size // 1024} KB ui:// page over Streamable HTTP, {a.reads} reads, Python mcp SDK client")
    print(f"{'':22} {'p50 ms':>8} {'p99 ms':>8}")
    print(f"{'ping (baseline)':22} {q(pings, 50):8.2f} {q(pings, 99):8.2f}")
    print(f"{'ui:// read, cache hit':22} {q(hits, 50):8.2f} {q(hits, 99):8.2f}")
    print(f"ratio read/ping: p50 {q(hits, 50) / q(pings, 50):.2f}x, p99 {q(hits, 99) / q(pings, 99):.2f}x")


if __name__ == "__main__":
    main()

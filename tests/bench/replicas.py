"""Benchmark (prints figures, asserts nothing): LLM requests made for 100 cold readers of one
page, spread round-robin over 1, 2 and 4 replicas sharing a real redis-server (goal: one page
request whatever the number of replicas), and for comparison the same replicas each on their
own (no --redis-url: one page per replica). Each reader is its own MCP session; all read at
once while the fake LLM takes `--delay` seconds to answer, so every read is cold.

    tests/.venv/bin/python tests/bench/replicas.py [--readers 100] [--delay 1.0]
"""

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from fake_llm import FakeLLM, page  # noqa: E402
from mcpclient import session  # noqa: E402
from replica_peers import Redis, replicas  # noqa: E402
from test_generation import gen_proxy  # noqa: E402


async def cold_readers(bases: list[str], readers: int) -> tuple[int, float]:
    """`readers` sessions, spread over `bases`, each reading ui://get_forecast at once."""
    served = 0
    async with contextlib.AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(session("mcp", bases[i % len(bases)])) for i in range(readers)]
        go = anyio.Event()

        async def one(s):
            nonlocal served
            await go.wait()
            r = await s.read_resource("ui://get_forecast")
            served += "BENCH-PAGE" in r.contents[0].text

        t0 = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for s in sessions:
                tg.start_soon(one, s)
            t0 = time.perf_counter()
            go.set()
        return served, time.perf_counter() - t0


def run(n: int, shared: bool, readers: int, delay: float, tmp: Path) -> dict:
    fake = FakeLLM()
    fake.default = {"html": page("BENCH-PAGE"), "delay": delay}
    try:
        with contextlib.ExitStack() as stack:
            if shared:
                redis = Redis(name="bench-redis")
                stack.callback(redis.stop)
                reps = stack.enter_context(replicas(fake, redis, n, tmp, name=f"bench-rep{n}"))
            else:
                reps = [stack.enter_context(gen_proxy(fake, "openai", name=f"bench-alone{n}-{i}", tmp_path=tmp)) for i in range(n)]
            served, wall = anyio.run(cold_readers, [b for b, _ in reps], readers)
        pages = len(fake.generations())
        return {"replicas": n, "redis": shared, "served": served, "pages": pages, "all": len(fake.requests), "wall": wall}
    finally:
        fake.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--readers", type=int, default=100)
    ap.add_argument("--delay", type=float, default=1.0, help="seconds the fake LLM takes per page")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for shared in (True, False):
            for n in (1, 2, 4):
                rows.append(run(n, shared, a.readers, a.delay, Path(tmp)))
    print(f"\n{a.readers} cold readers of one page, fake LLM answering in {a.delay:.1f} s")
    print(f"{'replicas':>8}  {'shared (Redis)':>14}  {'pages served':>12}  {'LLM page requests':>17}  {'LLM requests (all)':>18}  {'wall s':>6}")
    for r in rows:
        print(f"{r['replicas']:>8}  {'yes' if r['redis'] else 'no':>14}  {r['served']:>12}  {r['pages']:>17}  {r['all']:>18}  {r['wall']:>6.2f}")
    print("\nshared: LLM page requests per 100 cold readers = "
          + ", ".join(f"{r['pages'] * 100 / a.readers:g} over {r['replicas']}" for r in rows if r["redis"]) + " (goal: 1)")


if __name__ == "__main__":
    main()

"""Benchmark (prints figures, asserts nothing): `generation.warm` (issue 23, item 5). An
upstream of 10 tools, a provider stand-in that takes `--delay` seconds a page, and the release
binary: how long from start until every page is warm (by /readyz), against the time a first
reader would wait for one cold page, and what a first read costs once warm.

    tests/.venv/bin/python tests/bench/warm.py [--tools 10] [--delay 1.0] [--no-build]
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from benchlib import summary, use_release  # noqa: E402
from fake_llm import FakeLLM, page  # noqa: E402
from mcpclient import session  # noqa: E402
from replica_peers import readyz  # noqa: E402
from test_generation import RECORDER, gen_proxy  # noqa: E402


async def first_read(base: str, tool: str) -> float:
    async with session("mcp", base) as s:
        t0 = time.perf_counter()
        await s.read_resource(f"ui://{tool}")
        return time.perf_counter() - t0


def run(fake: FakeLLM, tools: int, warm: bool, folder: Path) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    upstream = ["--upstream", f"{sys.executable} {RECORDER} {folder / 'up.jsonl'} --extra-tools {tools}"]
    cfg = {"generation": {"warm": ["extra_*"] if warm else "off", "timeoutMs": 60000}}
    t0 = time.perf_counter()
    with gen_proxy(fake, "openai", upstream=upstream, config=cfg, name=f"bench-warm-{warm}", tmp_path=folder) as (base, _):
        ready = time.perf_counter() - t0
        all_warm = None
        if warm:
            while readyz(base).get("warm", {}).get("done", 0) < tools:
                time.sleep(0.05)
            all_warm = time.perf_counter() - t0
        read = anyio.run(first_read, base, "extra_0")
        return {"ready": ready, "all_warm": all_warm, "first_read": read, "generations": len(fake.generations())}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", type=int, default=10)
    ap.add_argument("--delay", type=float, default=1.0)
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    use_release(not a.no_build)
    folder = Path(tempfile.mkdtemp(prefix="mcp-bench-warm-"))
    rows = []
    for warm in (False, True):
        fake = FakeLLM()
        fake.default = {"html": page("BENCH-PAGE"), "delay": a.delay}
        try:
            print(f"warm {'on' if warm else 'off'} ...", flush=True)
            r = run(fake, a.tools, warm, folder / ("on" if warm else "off"))
        finally:
            fake.stop()
        label = "warm" if warm else "cold"
        rows.append((f"{label}: start to ready", f"{r['ready']:.2f} s", "-", None))
        if warm:
            rows.append((f"warm: start to all {a.tools} pages made", f"{r['all_warm']:.2f} s", "-", None))
        rows.append((f"{label}: a first reader's wait", f"{r['first_read'] * 1000:.0f} ms", "-", None))
        rows.append((f"{label}: LLM generation requests", str(r["generations"]), "-", None))
    summary(f"generation.warm, {a.tools} tools, provider {a.delay:.1f} s a page", rows)


if __name__ == "__main__":
    main()

"""Benchmark (prints figures, asserts nothing): the preview of a page being written (issue 51),
a plain partial page against hostile ones (actors/tests/preview_pages: 2,000 formatting elements
left open then paragraphs, misnested formatting, blocks nested 12,000 deep, nested tables, list
items never closed, a tag with thousands of attributes, an svg left open, a script never
closed, character references, a page of 1 MB), each about 60 KB, in one run:

- in-process (actors/examples/preview_bench.rs, release build): the median time of one
  preview and the most memory allocated at once during one, as ratios to the plain page's;
- through the service, as a page asks for it: the release binary with a provider
  (tests/e2e/fake_llm.py) that streams the page and then stalls, so it stays `writing`; the
  median time of `_ui_page_status` with `preview` over 5 calls and the most the service's RSS
  grew during one (its peak, VmHWM, reset before each call through /proc/PID/clear_refs), as
  ratios to the plain page's; a call without `preview` on the plain page is printed beside it
  (what a status call costs without parsing anything).

Issue 51's target: every hostile page at most 100 ms and 20 MB a preview.

    tests/.venv/bin/python tests/bench/preview.py [--calls 5] [--no-build]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import ROOT, UI_CAPS, HttpMcp, conftest, rss_kb, summary, use_release

sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from fake_llm import FakeLLM  # noqa: E402

TARGET_MS = 100
TARGET_MB = 20
TOOL = "get_forecast"


def example(args: list[str], build: bool) -> str:
    """Runs the in-process bench (built first, in release, unless --no-build)."""
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    if build:
        subprocess.run(["cargo", "build", "--profile", "dist", "-q", "-p", "mcp-gen-ui-actors", "--example", "preview_bench"], cwd=ROOT, check=True)
    return subprocess.run([str(target / "dist" / "examples" / "preview_bench"), *args], capture_output=True, text=True, check=True).stdout


def hwm_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def status(c: HttpMcp, preview: bool) -> dict:
    a = c.request("tools/call", {"name": "_ui_page_status", "arguments": {"toolName": TOOL, "waitMs": 0, "preview": preview}})
    assert "result" in a and not a["result"].get("isError"), a
    return a["result"]["structuredContent"]


def through_service(fake: FakeLLM, page: str, calls: int, folder: Path) -> dict:
    """One service whose provider streams `page` and stalls: the preview's time and the RSS
    it takes, `calls` times."""
    fake.default = {"html": page, "stall_after": len(page)}
    cfg = folder / "config.json"
    cfg.write_text(json.dumps({"generation": {"timeoutMs": 300, "stallMs": 120000, "maxRetries": 0}, "cache": {"type": "memory"}}))
    args = ["--demo", "--provider", "openai", "--llm-base-url", fake.base("openai"), "--config", str(cfg), "--log-level", "warn"]
    with conftest.proxy_http(args, name="bench-preview", env={"OPENAI_API_KEY": "sk-bench"}) as (base, proc):
        pid = proc.p.pid
        c = HttpMcp(base + "/mcp", UI_CAPS)
        read = c.request("resources/read", {"uri": f"ui://{TOOL}"})
        assert read["result"]["contents"][0]["_meta"]["mcp-gen-ui"].get("provisional"), "the page is still being written"
        kept = min(len(page), 64 * 1024)
        conftest.wait_for(lambda: (lambda s: s["state"] == "writing" and s["chars"] >= kept)(status(c, False)), 60,
                          "the whole page streamed to the service", every=0.1)
        times, grew, nodes = [], [], 0
        for _ in range(calls):
            Path(f"/proc/{pid}/clear_refs").write_text("5")
            before = rss_kb(pid)
            t = time.perf_counter()
            s = status(c, True)
            times.append(time.perf_counter() - t)
            grew.append(max(0, hwm_kb(pid) - before))
            nodes = len(json.dumps(s.get("preview")))
        bare = []
        for _ in range(calls):
            t = time.perf_counter()
            status(c, False)
            bare.append(time.perf_counter() - t)
        c.close()
    return {"ms": statistics.median(times) * 1000, "grew_kb": max(grew), "preview_bytes": nodes, "bare_ms": statistics.median(bare) * 1000}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    binary = use_release(not a.no_build)
    out = example([], not a.no_build)
    print(out.rsplit("RESULT", 1)[0], flush=True)
    inproc = json.loads(next(line[7:] for line in out.splitlines() if line.startswith("RESULT ")))
    folder = Path(tempfile.mkdtemp(prefix="mcp-bench-preview-"))
    example(["--dump", str(folder / "pages")], False)
    names = json.loads((folder / "pages" / "pages.json").read_text())
    fake = FakeLLM()
    served = []
    try:
        for i, name in enumerate(names):
            page = (folder / "pages" / f"{i}.html").read_text()
            (folder / str(i)).mkdir()
            r = through_service(fake, page, a.calls, folder / str(i))
            served.append(r)
            print(f"through {binary.name}: {name}: {r['ms']:.2f} ms, RSS +{r['grew_kb'] / 1024:.2f} MB at most "
                  f"(a status call without the preview: {r['bare_ms']:.2f} ms)", flush=True)
    finally:
        fake.stop()

    plain, base = inproc["plain"], served[0]
    rows = [
        (f"in-process, plain page ({plain['bytes'] / 1024:.0f} KB)", f"{plain['ms']:.2f} ms, {plain['peak_bytes'] / 2**20:.2f} MB", "baseline", None),
        ("through the service, plain page", f"{base['ms']:.2f} ms, RSS +{base['grew_kb'] / 1024:.2f} MB (no preview: {base['bare_ms']:.2f} ms)",
         "baseline", None),
    ]
    for h, s in zip(inproc["hostile"], served[1:]):
        ms, mb = h["ms"], h["peak_bytes"] / 2**20
        rows.append((f"in-process, {h['name']}", f"{ms:.2f} ms ({ms / plain['ms']:.2f}x), {mb:.2f} MB ({h['peak_bytes'] / max(plain['peak_bytes'], 1):.2f}x)",
                     f"<= {TARGET_MS} ms, {TARGET_MB} MB", ms <= TARGET_MS and mb <= TARGET_MB))
        smb = s["grew_kb"] / 1024
        rows.append(("  through the service", f"{s['ms']:.2f} ms ({s['ms'] / base['ms']:.2f}x), RSS +{smb:.2f} MB",
                     f"<= {TARGET_MS} ms, {TARGET_MB} MB", s["ms"] <= TARGET_MS and smb <= TARGET_MB))
    summary("preview.py (issue 51: the preview of a page being written, hostile partial pages against a plain one, same run)", rows)


if __name__ == "__main__":
    main()
